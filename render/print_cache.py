"""Renders with a PDF page, kept so that the deck export reuses a slide printed while it was inspected.

An inspection prints the slide's PDF page in the background on the page it loaded; the export
later asks for the same slide with its PDF and, when nothing it depends on changed (the HTML and
every file of the workspace a page may load), gets that print without rendering again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError

if TYPE_CHECKING:
    from render.renderer import RenderResult

log = logging.getLogger(__name__)

KEPT = 512  # recent renders with a PDF page
_OUTPUT_DIRS = {"renders", "previews", "tool_cache"}  # what renders and tools write: not inputs of a render
_PAGE_RESOURCES = (
    ".css",
    ".js",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".webp",
    ".svg",
    ".bmp",
    ".ico",
    ".woff",
    ".woff2",
    ".ttf",
    ".otf",
)

Key = tuple[Path, str, str]  # the HTML file, the aspect, the digest of what its render depends on


@dataclass(frozen=True)
class Printed:
    pdf: bytes
    data: Any  # the renderer's page reader's result; None without one


class PrintCache:
    """Renders (without their PDF) and the future of their print, least recently added first out."""

    def __init__(self, kept: int = KEPT):
        self.kept = kept
        self._entries: OrderedDict[Key, tuple[RenderResult, asyncio.Future[Printed]]] = OrderedDict()

    async def key(self, html: Path, aspect: str, root: Path) -> Key:
        return html, aspect, await asyncio.to_thread(state_digest, html, root)

    def remember(self, key: Key, result: RenderResult, printed: asyncio.Future[Printed]) -> None:
        self._entries[key] = (replace(result, pdf=None, page_data=None), printed)
        while len(self._entries) > self.kept:
            self._entries.popitem(last=False)

    async def reuse(self, key: Key, png_path: Path) -> RenderResult | None:
        """The earlier render of an unchanged page with its PDF, its PNG copied to `png_path`; None when
        there is none to reuse (never printed, its PNG is gone or its print failed: render afresh)."""
        if key not in self._entries:
            return None
        result, printed = self._entries[key]
        if not result.png_path.is_file() or result.png_path.suffix.lower() != png_path.suffix.lower():
            return None
        try:
            page = await printed
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("printing %s failed (%r); rendering it again", result.html_path, exc)
            self._entries.pop(key, None)
            return None
        return await asyncio.to_thread(_copied, replace(result, pdf=page.pdf, page_data=page.data), png_path)


def state_digest(html: Path, root: Path) -> str:
    """What a render depends on: the HTML and every file of the workspace a page may load (sizes, times)."""
    digest = hashlib.sha256(html.read_bytes())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and (folder != str(root) or d not in _OUTPUT_DIRS))
        for name in sorted(f for f in files if f.lower().endswith(_PAGE_RESOURCES)):
            try:
                st = os.stat(os.path.join(folder, name))
            except FileNotFoundError:
                continue
            digest.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()


def _copied(result: RenderResult, png_path: Path) -> RenderResult:
    """A cached render's result, its PNG copied where this caller wants it."""
    if png_path.resolve() != result.png_path.resolve():
        png_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(result.png_path, png_path)
    return replace(result, png_path=png_path, seconds=0.0)
