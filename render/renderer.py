"""The Renderer: one long-lived headless Chromium per process, pages reused, many renders in flight.

A render loads an HTML file from its task workspace (render/page_pool.py: requests outside the
workspace are blocked and counted) and yields the PNG (written where asked), optionally the page
as PDF (render/print_cache.py keeps prints for the deck export), and the defects measured by
render/inspection.py. When Chromium dies or hangs, render/chromium.py starts a fresh one and the
render is retried once, so callers never see a dead browser; a slide that hangs by itself (a
script that never ends) while the browser still answers costs one timeout, and fails with
RenderTimeout.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, TypeVar

import numpy as np
from PIL import Image
from playwright.async_api import CDPSession, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from core.cli import InputError
from render.chromium import CHROMIUM_ARGS, CLOSE_S, Chromium, RenderError
from render.config import RenderConfig, RenderJail
from render.defects.overlap import chart_covers
from render.inspection import COVERS_JS, MEASURE_JS, Defect, find_defects, measure_args
from render.page_pool import BLOCKED_EXTERNAL, BLOCKED_OUTSIDE, PagePool, Slot, blocked_reason, load, screenshot
from render.print_cache import PrintCache, Printed

__all__ = [  # what importers use; the parts live in the modules named in the docstring
    "BLOCKED_EXTERNAL",
    "BLOCKED_OUTSIDE",
    "CHROMIUM_ARGS",
    "KNOWN_SIZES",
    "SLIDE_SIZES",
    "PageReader",
    "RenderError",
    "RenderResult",
    "RenderTimeout",
    "Renderer",
    "aspect_size",
    "blocked_reason",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
# Reads more from a page right before its PDF page is printed (the editable PPTX's layout).
PageReader = Callable[[Page, CDPSession], Awaitable[Any]]

_A1 = (2244, 3178)
SLIDE_SIZES: dict[str, tuple[int, int]] = {
    "16:9": (1280, 720),
    "4:3": (960, 720),
    "A1": _A1,
    # Each A size is the next larger one halved: the sides shrink by sqrt(2).
    **{f"A{n}": (round(_A1[0] / math.sqrt(2) ** (n - 1)), round(_A1[1] / math.sqrt(2) ** (n - 1))) for n in (2, 3, 4)},
}
# Sizes whose exact use on a slide of another size means the page was laid out for another format.
KNOWN_SIZES: tuple[tuple[int, int], ...] = (*SLIDE_SIZES.values(), (1920, 1080), (1024, 768), (800, 600), (794, 1123))


def aspect_size(aspect: str) -> tuple[int, int]:
    """Slide size in CSS px for an aspect name ("16:9", "4:3", "A1".."A4")."""
    key = aspect.strip().upper() if aspect.strip().lower().startswith("a") else aspect.strip()
    if key not in SLIDE_SIZES:
        raise ValueError(f"unknown aspect {aspect!r}; expected one of {', '.join(SLIDE_SIZES)}")
    return SLIDE_SIZES[key]


class RenderTimeout(InputError, RenderError):
    """The slide did not finish loading within the render timeout while the browser kept answering: the slide hangs."""

    def __init__(self, html: Path, timeout_s: float):
        super().__init__(
            f"{html}: did not finish rendering within the {timeout_s:g} s render timeout (a script that never ends?)"
        )


@dataclass(frozen=True)
class RenderResult:
    html_path: Path
    png_path: Path
    width: int
    height: int
    defects: tuple[Defect, ...]
    layout: Mapping[str, Any]  # measure.js's result
    pdf: bytes | None
    blocked_requests: int
    failed_requests: Mapping[str, str]  # url -> reason, blocked ones included
    seconds: float
    attempts: int
    page_data: Any = None  # what the renderer's page reader read, with the PDF page


class Renderer:
    """Async context manager; `render` may be called from many tasks at once."""

    def __init__(
        self, cfg: RenderConfig | None = None, *, roots: Sequence[Path] = (), read_page: PageReader | None = None
    ) -> None:
        """`roots`: the folders the slides and their files live in, the only ones the jailed browser sees
        (render/jail.py). `read_page` runs on every printed page before its print; its result comes with the PDF."""
        self.cfg = cfg or RenderConfig()
        self.roots = tuple(Path(r).resolve() for r in roots)
        self._read_page = read_page
        self._sem = asyncio.Semaphore(self.cfg.max_concurrent)
        self._background: set[asyncio.Task[Any]] = set()
        self.chromium = Chromium(self.cfg, self._spawn, lambda: self.pages.browser_replaced(), self.roots)
        self.pages = PagePool(self.cfg, self.chromium, self._spawn)
        self.prints = PrintCache()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        await self.chromium.start()

    async def close(self) -> None:
        await self.chromium.close()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.chromium.stop_driver()

    @property
    def restarts(self) -> int:
        return self.chromium.restarts

    @property
    def browser_pid(self) -> int | None:
        """PID of the current Chromium browser process (tests kill it to simulate crashes)."""
        return self.chromium.current.pid if self.chromium.current else None

    @property
    def open_pages(self) -> int:
        return self.pages.open

    @property
    def pages_in_use(self) -> int:
        return self.pages.in_use

    async def render(
        self,
        html_path: Path,
        aspect: str,
        *,
        png_path: Path,
        workspace: Path | None = None,
        want_pdf: bool = False,
        print_later: bool = False,
    ) -> RenderResult:
        """Render one HTML file at the slide size of `aspect`; requests outside `workspace`
        (default: the file's folder) are blocked.

        `want_pdf`: the result carries the page as PDF; a render of the same, unchanged page
        printed earlier is reused. `print_later`: the PDF page is printed after the result
        is returned, on the same loaded page, for a later `want_pdf` render (the deck export)."""
        width, height = aspect_size(aspect)
        html = Path(html_path).resolve()
        root = Path(workspace).resolve() if workspace else html.parent
        if not html.is_file():
            raise ValueError(f"{html_path}: no such file")
        if html.suffix.lower() not in (".html", ".htm"):
            raise ValueError(f"{html_path}: not an HTML file")
        if not html.is_relative_to(root):
            raise ValueError(f"{html_path}: outside the workspace {root}")
        if RenderJail(self.cfg.jail) is RenderJail.bubblewrap and not any(root.is_relative_to(r) for r in self.roots):
            raise ValueError(f"{root}: outside the folders this renderer's jail shows ({', '.join(map(str, self.roots))})")
        if self.chromium.current is None:
            raise RuntimeError("Renderer used outside `async with` (not started)")
        printing = want_pdf or print_later
        key = await self.prints.key(html, aspect, root) if printing else None
        if want_pdf and key is not None:  # it is: want_pdf is printing
            reused = await self.prints.reuse(key, Path(png_path))
            if reused is not None:
                return reused
        async with self._sem:
            start = time.perf_counter()
            for attempt in (1, 2):
                used = self.chromium.current
                try:
                    captured = await asyncio.wait_for(
                        self._capture(html, (width, height), root, printing), self.cfg.timeout_s + CLOSE_S
                    )
                    future = captured[2]  # printing: the print's future is there
                    printed_page = await future if want_pdf and future is not None else None
                except (TimeoutError, PlaywrightError) as exc:
                    if attempt == 2:
                        raise RenderError(f"rendering {html} failed twice: {exc!r}") from exc
                    browser_failed = await self.chromium.recover(used)
                    if not browser_failed and isinstance(exc, (TimeoutError, PlaywrightTimeout)):
                        raise RenderTimeout(html, self.cfg.timeout_s) from exc
                    log.warning("render of %s failed (%r); retrying once", html, exc)
                    continue
                shot, layout, printed, failures, blocked = captured
                defects = await asyncio.to_thread(self._finish, shot, Path(png_path), layout, failures)
                result = RenderResult(
                    html_path=html,
                    png_path=Path(png_path),
                    width=width,
                    height=height,
                    defects=defects,
                    layout=layout,
                    pdf=printed_page.pdf if printed_page else None,
                    blocked_requests=blocked,
                    failed_requests=failures,
                    seconds=time.perf_counter() - start,
                    attempts=attempt,
                    page_data=printed_page.data if printed_page else None,
                )
                if key is not None and printed is not None:
                    self.prints.remember(key, result, printed)
                return result
        raise AssertionError("unreachable")

    async def _capture(
        self, html: Path, size: tuple[int, int], root: Path, printing: bool
    ) -> tuple[Shot, dict[str, Any], asyncio.Future[Printed] | None, dict[str, str], int]:
        """Screenshot, layout, failed requests; with `printing`, the PDF page is printed next on the same
        page by a background task (the returned future), which then releases the page."""
        slot = await self.pages.acquire(size)
        healthy = handed_over = False
        try:
            slot.reset(root)
            await load(slot, html)
            layout = json.loads(await slot.page.evaluate(MEASURE_JS, measure_args(*size)))
            if "error" in layout:
                log.warning("measuring %s failed, only pixels are inspected: %s", html, layout["error"])
            shot = await _shoot(slot, layout, self.cfg.device_scale_factor)
            failures = {**slot.failed, **slot.blocked}
            printed = None
            if printing:
                printed = self._spawn(self._print_and_release(slot, size))
                printed.add_done_callback(_retrieve)
                handed_over = True
            healthy = True
            return shot, layout, printed, failures, len(slot.blocked)
        finally:
            if not handed_over:
                await self.pages.release(slot, healthy)

    async def _print_and_release(self, slot: Slot, size: tuple[int, int]) -> Printed:
        healthy = False
        try:
            data = None
            if self._read_page is not None:  # before the print, which leaves the page to lay out again
                data = await asyncio.wait_for(self._read_page(slot.page, slot.cdp), self.cfg.timeout_s)
            pdf = await asyncio.wait_for(
                slot.page.pdf(width=f"{size[0]}px", height=f"{size[1]}px", print_background=True), self.cfg.timeout_s
            )
            healthy = True
            return Printed(pdf, data)
        finally:
            await self.pages.release(slot, healthy)

    def _finish(self, shot: Shot, png_path: Path, layout: Mapping[str, Any], failures: Mapping[str, str]) -> tuple[Defect, ...]:
        """Write the image atomically (in the format its name says: Chromium's PNG, or the same pixels as lossless
        WebP) and measure the pixel defects (runs in a worker thread)."""
        image = shot.image or _decoded(shot.png)
        png_path.parent.mkdir(parents=True, exist_ok=True)
        partial = png_path.with_name(f".{png_path.name}.{os.getpid()}.{id(shot)}.part")
        partial.write_bytes(encoded(shot.png, image, png_path.suffix))
        partial.replace(png_path)
        pixels, scale = np.asarray(image), self.cfg.device_scale_factor
        return find_defects(layout, pixels, failures, KNOWN_SIZES, scale, shot.under(pixels, scale))

    def _spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A background task that `close` waits for."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task


def encoded(png: bytes, image: Image.Image, suffix: str) -> bytes:
    """A screenshot's bytes for a file named `*{suffix}`: the PNG as Chromium wrote it, or lossless WebP.

    WebP at effort 1 of 6 is ~5x smaller than Chromium's PNG at ~25 ms a slide; higher efforts gain <1%."""
    if suffix.lower() == ".png":
        return png
    if suffix.lower() != ".webp":
        raise ValueError(f"renders are written as .png or .webp, not {suffix!r}")
    out = io.BytesIO()
    image.save(out, "WEBP", lossless=True, method=1, quality=100)
    return out.getvalue()


@dataclass(frozen=True)
class Shot:
    """A slide's screenshot; where text lies over a chart, also the chart beneath it, captured with the text
    boxes hidden (render/page/covers.js), for the overlap check (render/defects/overlap.py)."""

    png: bytes
    image: Image.Image | None = None  # decoded already: it told which pictures under text are charts
    beneath: bytes | None = None  # the PNG of `box` with the text boxes over charts hidden
    box: tuple[int, int, int, int] = (0, 0, 0, 0)  # CSS px: left, top, right, bottom

    def under(self, pixels: np.ndarray, scale: float) -> np.ndarray | None:
        """The screenshot with the capture beneath the text boxes in place, or None without one."""
        if self.beneath is None:
            return None
        part = np.asarray(_decoded(self.beneath))
        out = pixels.copy()
        top, left = round(self.box[1] * scale), round(self.box[0] * scale)
        height, width = out[top:, left:].shape[:2]
        out[top : top + part.shape[0], left : left + part.shape[1]] = part[:height, :width]
        return out


async def _shoot(slot: Slot, layout: Mapping[str, Any], scale: float) -> Shot:
    """The screenshot, and where text lies over a chart (a picture that is content and has a plain ground,
    judged on the screenshot) and the rules that need no more leave it open, the area under the text
    captured again with the text hidden: one more frame (about as dear as the screenshot), so only then."""
    png = await screenshot(slot, scale)
    if not any(pair["cover"] for pair in layout["overlaps"]):
        return Shot(png)
    image = await asyncio.to_thread(_decoded, png)
    covers = chart_covers(layout, np.asarray(image), scale)
    if not covers:
        return Shot(png, image)
    box = (
        math.floor(min(c[0] for c in covers)),
        math.floor(min(c[1] for c in covers)),
        math.ceil(max(c[2] for c in covers)),
        math.ceil(max(c[3] for c in covers)),
    )
    await slot.page.evaluate(COVERS_JS, True)
    try:
        return Shot(png, image, await screenshot(slot, scale, box), box)
    finally:
        await slot.page.evaluate(COVERS_JS, False)


def _decoded(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a background print's failure as seen: a slide changed since is never exported from it."""
    if not task.cancelled():
        task.exception()
