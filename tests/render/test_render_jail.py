"""The render jail, attacked as a model-written slide would: judged by effect outside the browser.

A loopback TCP listener and a UDP socket of the test count every connection and datagram; a canary
file lies next to the workspace. Each attack slide is rendered (with its PDF page, as an export
does), then a plain slide, which must render normally. The control renders the network attacks
with `render.jail=none`, where they reach the listeners: the counting works.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
import pytest_asyncio

from core.pdf import pymupdf
from render.config import RenderConfig, RenderJail
from render.jail import RenderJailUnavailable, launcher
from render.memory import MemoryCap
from render.renderer import Renderer, RenderError

pytestmark = [pytest.mark.chromium, pytest.mark.asyncio(loop_scope="module")]

PLAIN = "<html><body style='margin:0;width:1280px;height:720px'><h1 style='margin:80px'>Still fine</h1></body></html>"


@dataclass
class Listeners:
    """A loopback TCP listener and UDP socket that count what reaches them."""

    tcp: socket.socket = field(default_factory=socket.socket)
    udp: socket.socket = field(default_factory=lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    connections: list[bytes] = field(default_factory=list)
    datagrams: list[bytes] = field(default_factory=list)

    def start(self) -> None:
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.udp.bind(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._receive, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            conn.settimeout(1)
            try:
                self.connections.append(conn.recv(200))
            except OSError:
                self.connections.append(b"")
            conn.close()

    def _receive(self) -> None:
        while True:
            try:
                self.datagrams.append(self.udp.recv(2048))
            except OSError:
                return

    @property
    def tcp_port(self) -> int:
        return self.tcp.getsockname()[1]

    @property
    def udp_port(self) -> int:
        return self.udp.getsockname()[1]


@pytest.fixture(scope="module")
def listeners() -> Iterator[Listeners]:
    found = Listeners()
    found.start()
    yield found
    found.tcp.close()
    found.udp.close()


@dataclass(frozen=True)
class Scene:
    workspace: Path
    canary: Path
    secret: str


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    root = tmp_path_factory.mktemp("jail")
    (workspace := root / "ws").mkdir()
    secret = secrets.token_hex(16)
    (canary := root / "canary.txt").write_text(secret)
    return Scene(workspace, canary, secret)


def attacks(listeners: Listeners, scene: Scene) -> dict[str, str]:
    """Slide bodies, each trying one way out; what they read they write into the page."""
    http, canary = f"http://127.0.0.1:{listeners.tcp_port}", scene.canary.as_uri()
    shown = "t => { document.body.insertAdjacentText('beforeend', ' ' + t); }"
    return {
        "websocket": f"<script>new WebSocket('ws://127.0.0.1:{listeners.tcp_port}/websocket');</script>",
        "webrtc": (
            f"<script>const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{listeners.udp_port}'}}]}});"
            "pc.createDataChannel('x'); pc.createOffer().then(o => pc.setLocalDescription(o));</script>"
        ),
        "beacon": f"<script>navigator.sendBeacon('{http}/beacon', 'data');</script>",
        "eventsource": f"<script>new EventSource('{http}/events');</script>",
        "prefetch": f"<link rel='prefetch' href='{http}/prefetch'><link rel='preconnect' href='{http}'>",
        "dns": "<img src='http://canary-host.example/x.png'>",
        "iframe-file": f"<iframe src='{canary}' width='600' height='200'></iframe>",
        "fetch-file": f"<script>fetch('{canary}').then(r => r.text()).then({shown}).catch(() => {{}});</script>",
        "xhr-file": (
            f"<script>try {{ const x = new XMLHttpRequest(); x.open('GET', '{canary}', false); x.send(); ({shown})(x.responseText); }}"
            " catch (e) {}</script>"
        ),
        "worker-import": (
            f"<script>const w = new Worker(URL.createObjectURL(new Blob(['importScripts(\"{http}/worker.js\")'])));</script>"
        ),
    }


async def render_text(renderer: Renderer, workspace: Path, name: str, body: str) -> str:
    """Render a slide with its PDF page, wait for what it started, and return the page's text."""
    slide = workspace / f"{name}.html"
    slide.write_text(f"<html><body style='margin:0;width:1280px;height:720px'><h1>{name}</h1>{body}</body></html>")
    result = await renderer.render(slide, "16:9", png_path=workspace / f"{name}.png", workspace=workspace, want_pdf=True)
    assert result.pdf is not None
    with pymupdf.open(stream=result.pdf, filetype="pdf") as doc:
        return "".join(page.get_text() for page in doc)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def jailed(scene: Scene) -> AsyncIterator[Renderer]:
    async with Renderer(RenderConfig(timeout_s=10), roots=[scene.workspace]) as renderer:
        yield renderer


async def test_no_attack_gets_out_and_the_next_slide_renders(jailed: Renderer, listeners: Listeners, scene: Scene) -> None:
    (scene.workspace / "inside.txt").write_text("inside-the-workspace")  # the control: a frame's text reaches the PDF
    shown = await render_text(
        jailed, scene.workspace, "iframe-inside", "<iframe src='inside.txt' width='600' height='100'></iframe>"
    )
    assert "inside-the-workspace" in shown
    for name, body in attacks(listeners, scene).items():
        text = await render_text(jailed, scene.workspace, name, body)
        assert scene.secret not in text, name
        after = await render_text(jailed, scene.workspace, f"after-{name}", "<p>Still fine</p>")
        assert "Still fine" in after, name
    await render_text(jailed, scene.workspace, "settle", "<script>setTimeout(() => {}, 500)</script>")
    assert (listeners.connections, listeners.datagrams) == ([], [])
    assert jailed.restarts == 0 and jailed.browser_pid is not None
    browser = psutil.Process(jailed.browser_pid)
    for proc in (browser, *browser.children(recursive=True)):  # at most CAP_DAC_READ_SEARCH (bit 2), even as root
        effective = next(line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines() if line.startswith("CapEff"))
        assert int(effective.split()[1], 16) & ~(1 << 2) == 0, (proc.pid, proc.name(), effective)


async def test_without_the_jail_the_same_slides_reach_the_listeners(listeners: Listeners, scene: Scene, tmp_path: Path) -> None:
    listeners.connections.clear()
    listeners.datagrams.clear()
    bodies = attacks(listeners, scene)
    (workspace := tmp_path / "ws").mkdir()
    async with Renderer(RenderConfig(jail=RenderJail.none, timeout_s=10), roots=[workspace]) as open_renderer:
        for name in ("websocket", "webrtc"):
            await render_text(open_renderer, workspace, name, bodies[name])
            await render_text(open_renderer, workspace, f"after-{name}", "<script>setTimeout(() => {}, 300)</script>")
    assert any(b"GET /websocket" in c for c in listeners.connections) and listeners.datagrams  # the counting works


HOG = (
    "<script>const keep = []; for (let i = 0; i < 80; i++) { const b = new Uint8Array(100 * 1024 * 1024); b.fill(1);"
    " keep.push(b); } document.body.insertAdjacentText('beforeend', 'allocated-8-gb');</script>"
)


def tree_rss(pid: int) -> int:
    """Resident bytes of a browser: its process and every process under it."""
    total = 0
    with contextlib.suppress(psutil.Error):
        browser = psutil.Process(pid)
        for proc in (browser, *browser.children(recursive=True)):
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
    return total


async def test_a_slide_that_allocates_8_gb_loses_its_page_not_the_worker(tmp_path: Path) -> None:
    (workspace := tmp_path / "ws").mkdir()
    peak = 0

    async def watch(pid: int) -> None:
        nonlocal peak
        while True:
            peak = max(peak, tree_rss(pid))
            await asyncio.sleep(0.02)

    async with Renderer(RenderConfig(timeout_s=20, memory_mb=1024), roots=[workspace]) as capped:
        assert capped.chromium.memory.how != "none" and capped.browser_pid is not None
        before = tree_rss(capped.browser_pid)
        watcher = asyncio.create_task(watch(capped.browser_pid))
        try:
            text = await render_text(capped, workspace, "hog", HOG)
        except RenderError:  # its renderer was killed at the cap, twice
            text = ""
        finally:
            watcher.cancel()
        grew = (peak - before) / 1024**3
        assert "allocated-8-gb" not in text and grew < 1.5, f"the browser grew by {grew:.1f} GB"
        assert "Still fine" in await render_text(capped, workspace, "after-hog", "<p>Still fine</p>")


async def test_a_jailed_renderer_refuses_a_slide_outside_its_folders(jailed: Renderer, scene: Scene, tmp_path: Path) -> None:
    (outside := tmp_path / "slide.html").write_text(PLAIN)
    with pytest.raises(ValueError, match="outside the folders this renderer's jail shows"):
        await jailed.render(outside, "16:9", png_path=tmp_path / "x.png")


async def test_without_bubblewrap_the_jail_refuses_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    with pytest.raises(RenderJailUnavailable, match="^render.jail=bubblewrap: bwrap is not on PATH; install it"):
        launcher(RenderConfig(), [tmp_path], tmp_path, MemoryCap("none"))
