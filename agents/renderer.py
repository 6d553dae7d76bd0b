"""The Renderer: one long-lived headless Chromium per process, pages reused, many renders in flight.

HTML files load from a task workspace through their file:// URL, so relative assets
resolve; every request outside the workspace (other files, the network) is aborted and
counted. A render yields the PNG (written where asked), optionally the page as PDF, and
the defects measured by agents/inspection.py. When Chromium dies or hangs, the renderer
starts a fresh one and retries the render once, so callers never see a dead browser; a slide
that hangs by itself (a script that never ends) while the browser still answers costs one
timeout, and fails with RenderTimeout.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self, TypeVar
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
import psutil
from PIL import Image
from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Page,
    Playwright,
    Request,
    Route,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from agents.config import RenderConfig
from agents.inspection import MEASURE_JS, Defect, find_defects, measure_args

log = logging.getLogger(__name__)
T = TypeVar("T")
# Reads more from a page right after its PDF page is printed (the editable PPTX's layout).
PageReader = Callable[[Page, CDPSession], Awaitable[Any]]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

_A1 = (2244, 3178)
SLIDE_SIZES: dict[str, tuple[int, int]] = {
    "16:9": (1280, 720),
    "4:3": (960, 720),
    "A1": _A1,
    # Each A size is the next larger one halved: the sides shrink by sqrt(2).
    **{
        f"A{n}": (
            round(_A1[0] / math.sqrt(2) ** (n - 1)),
            round(_A1[1] / math.sqrt(2) ** (n - 1)),
        )
        for n in (2, 3, 4)
    },
}
# Sizes whose exact use on a slide of another size means the page was laid out for another format.
KNOWN_SIZES: tuple[tuple[int, int], ...] = (
    *SLIDE_SIZES.values(),
    (1920, 1080),
    (1024, 768),
    (800, 600),
    (794, 1123),
)

_HEALTH_CHECK_S = 5.0
_PRINTED_KEPT = 512  # recent renders with a PDF page, reused by the deck export when nothing changed
_OUTPUT_DIRS = {"renders", "previews", "tool_cache"}  # what renders and tools write: not inputs of a render
_PAGE_RESOURCES = (".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".ico",
                   ".woff", ".woff2", ".ttf", ".otf")  # fmt: skip
_CLOSE_S = 5.0
# Markup that runs code or changes the document's URL: such slides need a fresh navigation.
_NEEDS_NAVIGATION = re.compile(
    r"<script\b|\son[a-z]+\s*=|<base\b|http-equiv\s*=\s*[\"']?refresh", re.IGNORECASE
)
_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_DOCTYPE = re.compile(r"<!doctype[^>]*>", re.IGNORECASE)
_TWO_FRAMES = "() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))"
_FAILURE_REASONS = {
    "net::ERR_FILE_NOT_FOUND": "file not found",
    "net::ERR_ACCESS_DENIED": "access denied",
}


def aspect_size(aspect: str) -> tuple[int, int]:
    """Slide size in CSS px for an aspect name ("16:9", "4:3", "A1".."A4")."""
    key = (
        aspect.strip().upper()
        if aspect.strip().lower().startswith("a")
        else aspect.strip()
    )
    if key not in SLIDE_SIZES:
        raise ValueError(
            f"unknown aspect {aspect!r}; expected one of {', '.join(SLIDE_SIZES)}"
        )
    return SLIDE_SIZES[key]


class RenderError(RuntimeError):
    """A render failed twice, on two browsers or pages."""


class RenderTimeout(RenderError):
    """The slide did not finish loading within the render timeout while the browser kept answering: the slide hangs."""

    def __init__(self, html: Path, timeout_s: float):
        super().__init__(f"{html}: did not finish rendering within the {timeout_s:g} s render timeout (a script that never ends?)")


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


@dataclass(frozen=True)
class _Printed:
    pdf: bytes
    data: Any  # the page reader's result; None without one


@dataclass(eq=False)
class _Browser:
    """One Chromium and its pages; replaced whole on restart."""

    browser: Browser
    context: BrowserContext
    process: psutil.Process | None  # the browser process, to kill it if it hangs
    idle: list[_Slot] = field(default_factory=list)
    open: int = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


@dataclass(eq=False)
class _Slot:
    """A reusable page and the request bookkeeping of the render it serves."""

    page: Page
    owner: _Browser
    cdp: CDPSession
    size: tuple[int, int]  # the viewport, fixed for the page's life
    # The page shows a file:// document (set_content may reuse it).
    on_file: bool = False
    scripted: bool = True  # that document may have left scripts or timers behind
    root: Path = Path("/")
    blocked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def reset(self, root: Path) -> None:
        self.root = root
        self.blocked = {}
        self.failed = {}


class Renderer:
    """Async context manager; `render` may be called from many tasks at once."""

    def __init__(self, cfg: RenderConfig | None = None, *, read_page: PageReader | None = None) -> None:
        """`read_page` runs on every printed page after its print; its result comes with the PDF."""
        self.cfg = cfg or RenderConfig()
        self._read_page = read_page
        self.restarts = 0
        self._pw: Playwright | None = None
        self._current: _Browser | None = None
        self._sem = asyncio.Semaphore(self.cfg.max_concurrent)
        self._cond = asyncio.Condition()
        self._restart_lock = asyncio.Lock()
        self._background: set[asyncio.Task[Any]] = set()
        # Renders with a PDF page (printed or being printed), reused by the deck export while unchanged.
        self._printed: OrderedDict[tuple[Path, str, str], tuple[RenderResult, asyncio.Future[_Printed]]] = OrderedDict()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._pw = await async_playwright().start()
        self._current = await self._launch()

    async def close(self) -> None:
        if self._current is not None:
            await self._close_browser(self._current)
            self._current = None
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None

    @property
    def browser_pid(self) -> int | None:
        """PID of the current Chromium browser process (tests kill it to simulate crashes)."""
        return self._current.pid if self._current else None

    @property
    def open_pages(self) -> int:
        return self._current.open if self._current else 0

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
        if self._current is None:
            raise RuntimeError("Renderer used outside `async with` (not started)")
        printing = want_pdf or print_later
        key = (html, aspect, await asyncio.to_thread(_state_digest, html, root)) if printing else None
        if want_pdf and key in self._printed:
            reused = await self._reuse_printed(key, Path(png_path))
            if reused is not None:
                return reused
        async with self._sem:
            start = time.perf_counter()
            for attempt in (1, 2):
                used = self._current
                try:
                    captured = await asyncio.wait_for(
                        self._capture(html, (width, height), root, printing),
                        self.cfg.timeout_s + _CLOSE_S,
                    )
                    printed_page = await captured[2] if want_pdf else None  # printing: the print's future is there
                except (TimeoutError, PlaywrightError) as exc:
                    if attempt == 2:
                        raise RenderError(
                            f"rendering {html} failed twice: {exc!r}"
                        ) from exc
                    browser_failed = await self._recover(used)
                    if not browser_failed and isinstance(exc, (TimeoutError, PlaywrightTimeout)):
                        raise RenderTimeout(html, self.cfg.timeout_s) from exc
                    log.warning(
                        "render of %s failed (%r); retrying once", html, exc
                    )
                    continue
                png, layout, printed, failures, blocked = captured
                defects = await asyncio.to_thread(
                    self._finish, png, Path(png_path), layout, failures
                )
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
                    self._printed[key] = (replace(result, pdf=None, page_data=None), printed)
                    while len(self._printed) > _PRINTED_KEPT:
                        self._printed.popitem(last=False)
                return result
        raise AssertionError("unreachable")

    async def _reuse_printed(self, key: tuple[Path, str, str], png_path: Path) -> RenderResult | None:
        """The earlier render of an unchanged page with its PDF, its PNG copied to `png_path`; None when
        there is none to reuse (its PNG is gone or its print failed: then the caller renders afresh)."""
        result, printed = self._printed[key]
        if not result.png_path.is_file():
            return None
        try:
            page = await printed
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("printing %s failed (%r); rendering it again", result.html_path, exc)
            self._printed.pop(key, None)
            return None
        return await asyncio.to_thread(_reuse, replace(result, pdf=page.pdf, page_data=page.data), png_path)

    async def _capture(
        self, html: Path, size: tuple[int, int], root: Path, printing: bool
    ) -> tuple[bytes, dict[str, Any], asyncio.Future[_Printed] | None, dict[str, str], int]:
        """PNG, layout, failed requests; with `printing`, the PDF page is printed next on the same
        page by a background task (the returned future), which then releases the page."""
        slot = await self._acquire(size)
        healthy = handed_over = False
        try:
            slot.reset(root)
            page = slot.page
            await self._load(slot, html)
            layout = json.loads(await page.evaluate(MEASURE_JS, measure_args(*size)))
            if "error" in layout:
                log.warning(
                    "measuring %s failed, only pixels are inspected: %s",
                    html,
                    layout["error"],
                )
            png = await self._screenshot(slot, self.cfg.device_scale_factor)
            failures = {**slot.failed, **slot.blocked}
            printed = None
            if printing:
                printed = self._spawn(self._print_and_release(slot, size))
                printed.add_done_callback(_retrieve)
                handed_over = True
            healthy = True
            return png, layout, printed, failures, len(slot.blocked)
        finally:
            if not handed_over:
                await self._release(slot, healthy)

    async def _print_and_release(self, slot: _Slot, size: tuple[int, int]) -> _Printed:
        healthy = False
        try:
            data = None
            if self._read_page is not None:  # before the print, which leaves the page to lay out again
                data = await asyncio.wait_for(self._read_page(slot.page, slot.cdp), self.cfg.timeout_s)
            pdf = await asyncio.wait_for(
                slot.page.pdf(width=f"{size[0]}px", height=f"{size[1]}px", print_background=True),
                self.cfg.timeout_s,
            )
            healthy = True
            return _Printed(pdf, data)
        finally:
            await self._release(slot, healthy)

    @staticmethod
    async def _load(slot: _Slot, html: Path) -> None:
        """Show `html` in the slot's page.

        A navigation costs about 50 ms; writing a script-free slide into the page's current
        file:// document (with a <base> for its relative URLs) costs a few. Slides with scripts,
        and any slide after one, get a real navigation: a reused document keeps its globals.
        """
        text = _read_html(html)
        if (
            text is not None
            and slot.on_file
            and not slot.scripted
            and not _NEEDS_NAVIGATION.search(text)
        ):
            await slot.page.set_content(
                _with_base(text, html.parent.as_uri() + "/"), wait_until="load"
            )
            return
        slot.scripted = True
        await slot.page.goto(html.as_uri(), wait_until="load")
        slot.on_file = True
        slot.scripted = text is None or bool(_NEEDS_NAVIGATION.search(text))

    @staticmethod
    async def _screenshot(slot: _Slot, scale: float) -> bytes:
        """The viewport as PNG, straight from CDP: fast zlib settings halve Playwright's capture time.
        Right after a navigation there may be no painted frame yet: then wait for one and retry."""
        clip = {
            "x": 0,
            "y": 0,
            "width": slot.size[0],
            "height": slot.size[1],
            "scale": scale,  # device pixels per CSS px
        }
        params = {"format": "png", "optimizeForSpeed": True, "clip": clip}
        try:
            shot = await slot.cdp.send("Page.captureScreenshot", params)
        except PlaywrightError as exc:
            log.debug("capture without a frame (%s); waiting for one", exc)
            await slot.page.evaluate(_TWO_FRAMES)
            shot = await slot.cdp.send("Page.captureScreenshot", params)
        return base64.b64decode(shot["data"])

    def _finish(
        self,
        png: bytes,
        png_path: Path,
        layout: Mapping[str, Any],
        failures: Mapping[str, str],
    ) -> tuple[Defect, ...]:
        """Write the PNG atomically and measure the pixel defects (runs in a worker thread)."""
        png_path.parent.mkdir(parents=True, exist_ok=True)
        partial = png_path.with_name(f".{png_path.name}.{os.getpid()}.{id(png)}.part")
        partial.write_bytes(png)
        partial.replace(png_path)
        pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        return find_defects(
            layout, pixels, failures, KNOWN_SIZES, self.cfg.device_scale_factor
        )

    async def _acquire(self, size: tuple[int, int]) -> _Slot:
        """An idle page of this viewport size, else a new one (closing an idle page of another size
        when the pool is full). Pages never change size: a capture right after a resize can show
        the old surface, cut at the old width."""
        async with self._cond:
            while True:
                owner = self._current
                assert owner is not None
                same = [slot for slot in owner.idle if slot.size == size]
                if same:
                    owner.idle.remove(same[-1])
                    return same[-1]
                if owner.open < self.cfg.max_pages:
                    owner.open += 1
                    break
                if owner.idle:
                    self._spawn(
                        self._close_page(owner.idle.pop(0).page)
                    )  # its place goes to the new page
                    break
                await self._cond.wait()
        try:
            return await self._new_slot(owner, size)
        except PlaywrightError:
            async with self._cond:
                owner.open -= 1
                self._cond.notify()
            raise

    async def _new_slot(self, owner: _Browser, size: tuple[int, int]) -> _Slot:
        page = await owner.context.new_page()
        slot = _Slot(
            page=page,
            owner=owner,
            size=size,
            cdp=await owner.context.new_cdp_session(page),
        )
        page.set_default_timeout(self.cfg.timeout_s * 1000)

        def record_failure(request: Request) -> None:
            slot.failed.setdefault(request.url, _failure_reason(request.failure))

        page.on("requestfailed", record_failure)
        await page.set_viewport_size({"width": size[0], "height": size[1]})
        await page.emulate_media(media="screen")
        await page.route("**/*", lambda route: self._route(slot, route))
        return slot

    @staticmethod
    async def _route(slot: _Slot, route: Route) -> None:
        url = route.request.url
        reason = blocked_reason(url, slot.root)
        try:
            if reason is None:
                await route.continue_()
            else:
                slot.blocked[url] = reason
                await route.abort("blockedbyclient")
        except (
            PlaywrightError
        ) as exc:  # the page went away mid-request: nothing left to route
            log.debug("route for %s dropped: %s", url, exc)

    async def _release(self, slot: _Slot, healthy: bool) -> None:
        async with self._cond:
            owner = slot.owner
            if healthy and owner is self._current:
                owner.idle.append(slot)
            else:
                owner.open -= 1
                self._spawn(self._close_page(slot.page))
            self._cond.notify()

    async def _recover(self, failed: _Browser | None) -> bool:
        """Restart Chromium (`failed`, the one a render used) unless it still answers (then only the
        failed page was discarded). True when the browser had failed (restarted now or by another render)."""
        async with self._restart_lock:
            if failed is not self._current or failed is None:
                return True  # another render restarted it already
            if await self._responsive(failed):
                return False
            log.warning(
                "Chromium (pid %s) is dead or hung; starting a new one", failed.pid
            )
            _kill(failed.process)
            self._current = await self._launch()
            self.restarts += 1
            async with self._cond:
                self._cond.notify_all()
            self._spawn(self._close_browser(failed))
            return True

    async def _responsive(self, owner: _Browser) -> bool:
        if not owner.browser.is_connected():
            return False
        wait = min(_HEALTH_CHECK_S, self.cfg.timeout_s)
        try:
            page = await asyncio.wait_for(owner.context.new_page(), wait)
            await asyncio.wait_for(page.close(), wait)
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("Chromium health check failed: %r", exc)
            return False
        return True

    async def _launch(self) -> _Browser:
        assert self._pw is not None
        try:
            return await self._launch_browser()
        except PlaywrightError as exc:
            log.warning(
                "Chromium launch failed (%r); restarting the Playwright driver", exc
            )
            await self._restart_driver()
            try:
                return await self._launch_browser()
            except PlaywrightError as exc2:
                raise RenderError(
                    f"cannot launch Chromium at {self.cfg.chromium_path}: {exc2}"
                ) from exc2

    async def _launch_browser(self) -> _Browser:
        assert self._pw is not None
        before = _chromium_processes()
        browser = await self._pw.chromium.launch(
            executable_path=self.cfg.chromium_path,
            args=CHROMIUM_ARGS,
            timeout=self.cfg.timeout_s * 1000,
        )
        context = await browser.new_context(
            device_scale_factor=self.cfg.device_scale_factor, service_workers="block"
        )
        new = _chromium_processes().keys() - before.keys()
        process = _chromium_processes()[min(new)] if new else None
        log.info("Chromium started (pid %s)", process.pid if process else None)
        return _Browser(browser=browser, context=context, process=process)

    async def _restart_driver(self) -> None:
        if self._pw is not None:
            try:
                await asyncio.wait_for(self._pw.stop(), _CLOSE_S)
            except (TimeoutError, PlaywrightError) as exc:
                log.warning("stopping the old Playwright driver failed: %r", exc)
        self._pw = await async_playwright().start()

    async def _close_browser(self, owner: _Browser) -> None:
        try:
            await asyncio.wait_for(owner.browser.close(), _CLOSE_S)
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("closing Chromium (pid %s) failed: %r", owner.pid, exc)
        _kill(owner.process)

    @staticmethod
    async def _close_page(page: Page) -> None:
        try:
            await asyncio.wait_for(page.close(run_before_unload=False), _CLOSE_S)
        except (TimeoutError, PlaywrightError) as exc:
            log.debug("closing a failed page: %r", exc)

    def _spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A background task that `close` waits for."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task


def _state_digest(html: Path, root: Path) -> str:
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


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a background print's failure as seen: a slide changed since is never exported from it."""
    if not task.cancelled():
        task.exception()


def _reuse(result: RenderResult, png_path: Path) -> RenderResult:
    """A cached render's result, its PNG copied where this caller wants it."""
    if png_path.resolve() != result.png_path.resolve():
        png_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(result.png_path, png_path)
    return replace(result, png_path=png_path, seconds=0.0)


BLOCKED_OUTSIDE = "blocked: outside the workspace"
BLOCKED_EXTERNAL = "blocked: external URL (download it into the workspace)"


def blocked_reason(url: str, root: Path) -> str | None:
    """Why a request from a slide is refused (BLOCKED_OUTSIDE, BLOCKED_EXTERNAL), or None when it may load."""
    scheme = urlparse(url).scheme
    if scheme in ("data", "blob", "about"):
        return None
    if scheme == "file":
        path = Path(url2pathname(urlparse(url).path)).resolve()
        return None if path.is_relative_to(root) else BLOCKED_OUTSIDE
    return BLOCKED_EXTERNAL


def _read_html(path: Path) -> str | None:
    """The file as text, or None when it is not UTF-8 (then Chromium decodes it while navigating)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _with_base(text: str, base: str) -> str:
    """`text` with <base href=base> at the start of its head (after the doctype: keeps standards mode)."""
    tag = f'<base href="{base}">'
    match = _HEAD.search(text) or _DOCTYPE.search(text)
    if match is None:
        return tag + text
    return text[: match.end()] + tag + text[match.end() :]


def _failure_reason(failure: str | None) -> str:
    return _FAILURE_REASONS.get(failure or "", failure or "failed")


def _chromium_processes() -> dict[int, psutil.Process]:
    """Chromium browser (not helper) processes under this one, by pid."""
    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            cmdline = proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if (
            cmdline
            and "chrom" in Path(cmdline[0]).name
            and not any(a.startswith("--type=") for a in cmdline)
        ):
            found[proc.pid] = proc
    return found


def _kill(process: psutil.Process | None) -> None:
    """Kill what is left of a closed or hung browser; psutil refuses a reused pid."""
    if process is None:
        return
    try:
        doomed = [*process.children(recursive=True), process]
    except psutil.NoSuchProcess:
        return
    for proc in doomed:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
