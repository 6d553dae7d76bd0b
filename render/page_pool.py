"""Pages of the current browser, reused by viewport size, and what a render does on one.

A page loads a slide from its workspace through its file:// URL, so relative assets resolve;
every request outside the workspace (other files, the network) is aborted and recorded.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from playwright.async_api import CDPSession, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from render.chromium import CLOSE_S, BrowserHandle, Chromium, Spawn
from render.config import RenderConfig

log = logging.getLogger(__name__)

BLOCKED_OUTSIDE = "blocked: outside the workspace"
BLOCKED_EXTERNAL = "blocked: external URL (download it into the workspace)"
# Markup that runs code or changes the document's URL: such slides need a fresh navigation.
_NEEDS_NAVIGATION = re.compile(r"<script\b|\son[a-z]+\s*=|<base\b|http-equiv\s*=\s*[\"']?refresh", re.IGNORECASE)
_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_DOCTYPE = re.compile(r"<!doctype[^>]*>", re.IGNORECASE)
_TWO_FRAMES = "() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))"
_FAILURE_REASONS = {"net::ERR_FILE_NOT_FOUND": "file not found", "net::ERR_ACCESS_DENIED": "access denied"}


@dataclass(eq=False)
class Slot:
    """A reusable page and the request bookkeeping of the render it serves."""

    page: Page
    owner: BrowserHandle
    cdp: CDPSession
    size: tuple[int, int]  # the viewport, fixed for the page's life
    on_file: bool = False  # the page shows a file:// document (set_content may reuse it)
    scripted: bool = True  # that document may have left scripts or timers behind
    root: Path = Path("/")
    blocked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def reset(self, root: Path) -> None:
        self.root = root
        self.blocked = {}
        self.failed = {}


class PagePool:
    """At most `cfg.max_pages` pages on the current browser; a page that failed is closed, not reused."""

    def __init__(self, cfg: RenderConfig, chromium: Chromium, spawn: Spawn):
        self.cfg, self.chromium, self._spawn = cfg, chromium, spawn
        self._cond = asyncio.Condition()

    @property
    def open(self) -> int:
        return self.chromium.current.open if self.chromium.current else 0

    @property
    def in_use(self) -> int:
        """Pages a render holds now (open, not idle in the pool)."""
        current = self.chromium.current
        return current.open - len(current.idle) if current else 0

    async def acquire(self, size: tuple[int, int]) -> Slot:
        """An idle page of this viewport size, else a new one (closing an idle page of another size
        when the pool is full). Pages never change size: a capture right after a resize can show
        the old surface, cut at the old width."""
        async with self._cond:
            while True:
                owner = self.chromium.current
                assert owner is not None
                same = [slot for slot in owner.idle if slot.size == size]
                if same:
                    owner.idle.remove(same[-1])
                    return same[-1]
                if owner.open < self.cfg.max_pages:
                    owner.open += 1
                    break
                if owner.idle:
                    self._spawn(close_page(owner.idle.pop(0).page))  # its place goes to the new page
                    break
                await self._cond.wait()
        try:
            return await self._new_slot(owner, size)
        except PlaywrightError:
            async with self._cond:
                owner.open -= 1
                self._cond.notify()
            raise

    async def release(self, slot: Slot, healthy: bool) -> None:
        async with self._cond:
            owner = slot.owner
            if healthy and owner is self.chromium.current:
                owner.idle.append(slot)
            else:
                owner.open -= 1
                self._spawn(close_page(slot.page))
            self._cond.notify()

    async def browser_replaced(self) -> None:
        """Wake the renders waiting for a page: the new browser has room."""
        async with self._cond:
            self._cond.notify_all()

    async def _new_slot(self, owner: BrowserHandle, size: tuple[int, int]) -> Slot:
        page = await owner.context.new_page()
        slot = Slot(page=page, owner=owner, size=size, cdp=await owner.context.new_cdp_session(page))
        page.set_default_timeout(self.cfg.timeout_s * 1000)

        def record_failure(request: Request) -> None:
            slot.failed.setdefault(request.url, _failure_reason(request.failure))

        page.on("requestfailed", record_failure)
        await page.set_viewport_size({"width": size[0], "height": size[1]})
        await page.emulate_media(media="screen")
        await page.route("**/*", lambda route: _route(slot, route))
        return slot


async def load(slot: Slot, html: Path) -> None:
    """Show `html` in the slot's page.

    A navigation costs about 50 ms; writing a script-free slide into the page's current
    file:// document (with a <base> for its relative URLs) costs a few. Slides with scripts,
    and any slide after one, get a real navigation: a reused document keeps its globals.
    """
    text = read_html(html)
    if text is not None and slot.on_file and not slot.scripted and not _NEEDS_NAVIGATION.search(text):
        await slot.page.set_content(with_base(text, html.parent.as_uri() + "/"), wait_until="load")
        return
    slot.scripted = True
    await slot.page.goto(html.as_uri(), wait_until="load")
    slot.on_file = True
    slot.scripted = text is None or bool(_NEEDS_NAVIGATION.search(text))


async def screenshot(slot: Slot, scale: float, box: Sequence[int] | None = None) -> bytes:
    """The viewport (or the part `box`, [left, top, right, bottom] in CSS px) as PNG, straight from CDP:
    fast zlib settings halve Playwright's capture time. Right after a navigation there may be no painted
    frame yet: then wait for one and retry."""
    left, top, right, bottom = box or (0, 0, *slot.size)
    clip = {"x": left, "y": top, "width": right - left, "height": bottom - top, "scale": scale}  # scale: device px per CSS px
    params = {"format": "png", "optimizeForSpeed": True, "clip": clip}
    try:
        shot = await slot.cdp.send("Page.captureScreenshot", params)
    except PlaywrightError as exc:
        log.debug("capture without a frame (%s); waiting for one", exc)
        await slot.page.evaluate(_TWO_FRAMES)
        shot = await slot.cdp.send("Page.captureScreenshot", params)
    return base64.b64decode(shot["data"])


async def close_page(page: Page) -> None:
    try:
        await asyncio.wait_for(page.close(run_before_unload=False), CLOSE_S)
    except (TimeoutError, PlaywrightError) as exc:
        log.debug("closing a failed page: %r", exc)


async def _route(slot: Slot, route: Route) -> None:
    url = route.request.url
    reason = blocked_reason(url, slot.root)
    try:
        if reason is None:
            await route.continue_()
        else:
            slot.blocked[url] = reason
            await route.abort("blockedbyclient")
    except PlaywrightError as exc:  # the page went away mid-request: nothing left to route
        log.debug("route for %s dropped: %s", url, exc)


def blocked_reason(url: str, root: Path) -> str | None:
    """Why a request from a slide is refused (BLOCKED_OUTSIDE, BLOCKED_EXTERNAL), or None when it may load."""
    scheme = urlparse(url).scheme
    if scheme in ("data", "blob", "about"):
        return None
    if scheme == "file":
        path = Path(url2pathname(urlparse(url).path)).resolve()
        return None if path.is_relative_to(root) else BLOCKED_OUTSIDE
    return BLOCKED_EXTERNAL


def read_html(path: Path) -> str | None:
    """The file as text, or None when it is not UTF-8 (then Chromium decodes it while navigating)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def with_base(text: str, base: str) -> str:
    """`text` with <base href=base> at the start of its head (after the doctype: keeps standards mode)."""
    tag = f'<base href="{base}">'
    match = _HEAD.search(text) or _DOCTYPE.search(text)
    if match is None:
        return tag + text
    return text[: match.end()] + tag + text[match.end() :]


def _failure_reason(failure: str | None) -> str:
    return _FAILURE_REASONS.get(failure or "", failure or "failed")
