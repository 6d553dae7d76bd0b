"""One headless Chromium and its Playwright driver: launch, health check, restart, close.

The renderer (render/renderer.py) renders on the current browser; when a render fails it asks
`recover`, which restarts the browser unless it still answers, so callers never see a dead one.
Each browser starts in the render jail (render/jail.py) unless `render.jail=none`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import psutil
from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from core.cli import Failed
from render.config import RenderConfig, RenderJail
from render.jail import launcher, sandboxed
from render.memory import MemoryCap, memory_cap

if TYPE_CHECKING:
    from render.page_pool import Slot

log = logging.getLogger(__name__)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HEALTH_CHECK_S = 5.0
CLOSE_S = 5.0

Spawn = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]


class RenderError(Failed, RuntimeError):
    """A render failed twice, on two browsers or pages, or no browser could be started."""


@dataclass(eq=False)
class BrowserHandle:
    """One Chromium and its pages; replaced whole on restart."""

    browser: Browser
    context: BrowserContext
    process: psutil.Process | None  # the browser process, to kill it if it hangs
    idle: list[Slot] = field(default_factory=list)
    open: int = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


class Chromium:
    """The driver and the current browser. `recover` calls `after_restart` once a new browser is up."""

    def __init__(self, cfg: RenderConfig, spawn: Spawn, after_restart: Callable[[], Awaitable[None]], roots: Sequence[Path] = ()):
        self.cfg, self.roots = cfg, tuple(roots)
        self.executable = cfg.chromium_path  # what Playwright starts: Chromium, or the jail's launcher script
        self._launcher_dir: tempfile.TemporaryDirectory[str] | None = None
        self.memory = MemoryCap("none")  # the jailed browser's memory cap, once started
        # Chromium's own sandbox: on in the jail unless it cannot start there (then off for this renderer, with a warning)
        self.sandboxed = RenderJail(cfg.jail) is RenderJail.bubblewrap and sandboxed()
        self.restarts = 0
        self.current: BrowserHandle | None = None
        self._spawn, self._after_restart = spawn, after_restart
        self._pw: Playwright | None = None
        self._restart_lock = asyncio.Lock()

    async def start(self) -> None:
        self._launcher_dir = tempfile.TemporaryDirectory(prefix="deckforge-chromium-")
        jailed = RenderJail(self.cfg.jail) is RenderJail.bubblewrap
        self.memory = memory_cap(self.cfg.memory_mb) if jailed else MemoryCap("none")
        self.executable = launcher(self.cfg, self.roots, Path(self._launcher_dir.name), self.memory)
        self._pw = await async_playwright().start()
        self.current = await self._launch()

    async def close(self) -> None:
        if self.current is not None:
            await self.close_browser(self.current)
            self.current = None

    async def stop_driver(self) -> None:
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None
        if self._launcher_dir is not None:
            self._launcher_dir.cleanup()
            self._launcher_dir = None
        self.memory.remove()

    async def recover(self, failed: BrowserHandle | None) -> bool:
        """Restart Chromium (`failed`, the one a render used) unless it still answers (then only the
        failed page was discarded). True when the browser had failed (restarted now or by another render)."""
        async with self._restart_lock:
            if failed is not self.current or failed is None:
                return True  # another render restarted it already
            if await self._responsive(failed):
                return False
            log.warning("Chromium (pid %s) is dead or hung; starting a new one", failed.pid)
            kill(failed.process)
            self.current = await self._launch()
            self.restarts += 1
            await self._after_restart()
            self._spawn(self.close_browser(failed))
            return True

    async def close_browser(self, owner: BrowserHandle) -> None:
        try:
            await asyncio.wait_for(owner.browser.close(), CLOSE_S)
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("closing Chromium (pid %s) failed: %r", owner.pid, exc)
        kill(owner.process)

    async def _responsive(self, owner: BrowserHandle) -> bool:
        if not owner.browser.is_connected():
            return False
        wait = min(HEALTH_CHECK_S, self.cfg.timeout_s)
        try:
            page = await asyncio.wait_for(owner.context.new_page(), wait)
            await asyncio.wait_for(page.close(), wait)
        except (TimeoutError, PlaywrightError) as exc:
            log.warning("Chromium health check failed: %r", exc)
            return False
        return True

    async def _launch(self) -> BrowserHandle:
        assert self._pw is not None
        if self.sandboxed:
            try:
                return await self._launch_browser()
            except PlaywrightError as exc:
                log.warning("Chromium's own sandbox does not start in the render jail here (%r): running it without", exc)
                self.sandboxed = False
        try:
            return await self._launch_browser()
        except PlaywrightError as exc:
            log.warning("Chromium launch failed (%r); restarting the Playwright driver", exc)
            await self._restart_driver()
            try:
                return await self._launch_browser()
            except PlaywrightError as exc2:
                raise RenderError(f"cannot launch Chromium at {self.cfg.chromium_path}: {exc2}") from exc2

    async def _launch_browser(self) -> BrowserHandle:
        assert self._pw is not None
        before = chromium_processes()
        args = [a for a in CHROMIUM_ARGS if a != "--no-sandbox"] if self.sandboxed else CHROMIUM_ARGS
        browser = await self._pw.chromium.launch(
            executable_path=self.executable,
            args=args,
            chromium_sandbox=self.sandboxed,
            timeout=self.cfg.timeout_s * 1000,
        )
        context = await browser.new_context(device_scale_factor=self.cfg.device_scale_factor, service_workers="block")
        new = chromium_processes().keys() - before.keys()
        process = chromium_processes()[min(new)] if new else None
        jail = RenderJail(self.cfg.jail).value
        sandbox = "on" if self.sandboxed else "off"
        log.info(
            "Chromium started (pid %s; jail %s, its sandbox %s, memory cap %s)",
            process.pid if process else None,
            jail,
            sandbox,
            self.memory.how,
        )
        return BrowserHandle(browser=browser, context=context, process=process)

    async def _restart_driver(self) -> None:
        if self._pw is not None:
            try:
                await asyncio.wait_for(self._pw.stop(), CLOSE_S)
            except (TimeoutError, PlaywrightError) as exc:
                log.warning("stopping the old Playwright driver failed: %r", exc)
        self._pw = await async_playwright().start()


def chromium_processes() -> dict[int, psutil.Process]:
    """Chromium browser (not helper) processes under this one, by pid."""
    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            cmdline = proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if cmdline and "chrom" in Path(cmdline[0]).name and not any(a.startswith("--type=") for a in cmdline):
            found[proc.pid] = proc
    return found


def kill(process: psutil.Process | None) -> None:
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
