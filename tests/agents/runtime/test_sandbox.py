"""The sandbox: no path, command or download escapes the workspace or reaches a private network."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator

import httpx
import pytest
from aiohttp import web
from PIL import Image

from agents.config import SandboxConfig
from agents.sandbox import SandboxError, Workspace
from agents.tools import ToolContext
from agents.web import checked_request
from tests.agents.runtime.helpers import live_processes, no_process_left, snapshot

Call = Callable[..., Awaitable[Any]]

# ---------------------------------------------------------------- paths


@pytest.fixture
def escapes(workspace: Workspace, outside: Path) -> list[str]:
    (workspace.root / "link_dir").symlink_to(outside)
    (workspace.root / "link_file").symlink_to(outside / "secret.txt")
    (workspace.root / "etc").symlink_to("/etc")
    return [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        str(outside / "secret.txt"),
        "/etc/passwd",
        "link_dir/secret.txt",
        "link_file",
        "etc/passwd",
    ]


ESCAPING_CALLS = [
    ("read_file", {}),
    ("write_file", {"content": "pwned"}),
    ("write_file", {"content": "pwned", "mode": "append"}),
    ("edit_file", {"old_string": "top", "new_string": "pwned"}),
    ("create_directory", {}),
    ("list_directory", {}),
]


@pytest.mark.parametrize("tool,extra", ESCAPING_CALLS, ids=[f"{t}-{e.get('mode', '')}" for t, e in ESCAPING_CALLS])
async def test_no_path_tool_escapes(call: Call, escapes: list[str], outside: Path, tool: str, extra: dict) -> None:
    before = snapshot(outside)
    for path in escapes:
        obs = await call(tool, path=path, **extra)
        assert obs.is_error, (tool, path, obs.text)
        assert "workspace" in obs.text or "symbolic link" in obs.text, obs.text
        assert "top secret" not in obs.text
    assert snapshot(outside) == before


async def test_move_file_cannot_take_files_in_or_out(call: Call, workspace: Workspace, escapes: list[str], outside: Path) -> None:
    (workspace.root / "mine.txt").write_text("mine")
    before = snapshot(outside)
    for path in escapes:
        assert (await call("move_file", source=path, destination="stolen.txt")).is_error
        assert (await call("move_file", source="mine.txt", destination=path)).is_error
    assert snapshot(outside) == before and not (workspace.root / "stolen.txt").exists()


async def test_paths_inside_work_including_absolute_and_internal_links(call: Call, workspace: Workspace) -> None:
    assert not (await call("write_file", path=str(workspace.root / "a/b.md"), content="# hi")).is_error
    (workspace.root / "alias").symlink_to(workspace.root / "a")
    assert (await call("read_file", path="alias/b.md")).text == "# hi"
    assert (await call("read_file", path="a/./../a/b.md")).text == "# hi"


async def test_listing_shows_links_without_following_them(call: Call, escapes: list[str]) -> None:
    text = (await call("list_directory", path=".", depth=3)).text
    assert "etc (symbolic link)" in text and "passwd" not in text and "secret" not in text


def swap_after_check(monkeypatch: pytest.MonkeyPatch, target: Path, link_to: Path) -> None:
    """Replace `target` by a symlink right after the sandbox checked the path: the race, made deterministic."""
    original = Workspace.resolve

    def resolve_then_swap(self: Workspace, path: str):
        resolved = original(self, path)
        if target.is_dir() and not target.is_symlink():
            for child in target.iterdir():
                child.unlink()
            target.rmdir()
        elif target.exists() or target.is_symlink():
            target.unlink()
        target.symlink_to(link_to)
        return resolved

    monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)


@pytest.mark.parametrize(
    "tool,extra",
    [("read_file", {}), ("write_file", {"content": "pwned"}), ("edit_file", {"old_string": "top", "new_string": "x"})],
)
async def test_directory_swapped_for_a_symlink_after_the_check(
    call: Call, workspace: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch, tool: str, extra: dict
) -> None:
    (workspace.root / "sub").mkdir()
    (workspace.root / "sub/secret.txt").write_text("top harmless")
    before = snapshot(outside)
    swap_after_check(monkeypatch, workspace.root / "sub", outside)
    obs = await call(tool, path="sub/secret.txt", **extra)
    assert (workspace.root / "sub").is_symlink(), "the swap happened"
    assert obs.is_error and "symbolic link" in obs.text and "top secret" not in obs.text
    assert snapshot(outside) == before


async def test_file_swapped_for_a_symlink_to_etc_after_the_check(
    call: Call, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace.root / "notes.txt").write_text("harmless")
    swap_after_check(monkeypatch, workspace.root / "notes.txt", Path("/etc/passwd"))
    obs = await call("read_file", path="notes.txt")
    assert obs.is_error and "root:" not in obs.text


async def test_special_files_are_refused_without_hanging(call: Call, workspace: Workspace) -> None:
    os.mkfifo(workspace.root / "pipe")
    (workspace.root / "folder").mkdir()
    calls = [
        ("read_file", {"path": "pipe"}),
        ("read_file", {"path": "folder"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("write_file", {"path": ".", "content": "x"}),
        ("edit_file", {"path": "pipe", "old_string": "a", "new_string": "b"}),
    ]
    for tool, arguments in calls:
        obs = await asyncio.wait_for(call(tool, **arguments), 2)
        assert obs.is_error and obs.text.startswith("'"), (tool, obs.text)  # a sandbox refusal naming the path


def test_workspace_resolve_refusals(workspace: Workspace) -> None:
    for bad in ("..", "../x", "a/../../x", "/", "/etc"):
        with pytest.raises(SandboxError):
            workspace.resolve(bad)
    assert str(workspace.resolve("a/../b/./c")) == "b/c"
    assert str(workspace.resolve(".")) == "."


# ---------------------------------------------------------------- sizes


async def test_huge_write_is_refused(call: Call, ctx: ToolContext, workspace: Workspace) -> None:
    obs = await call("write_file", path="big.txt", content="x" * (ctx.sandbox.max_write_bytes + 1))
    assert obs.is_error and "at most" in obs.text and not (workspace.root / "big.txt").exists()


@pytest.fixture
def small_limits() -> SandboxConfig:
    return SandboxConfig(
        command_timeout_s=1, max_write_bytes=1_000_000, max_read_bytes=200_000, max_output_chars=2000, command_memory_mb=512
    )


@pytest.fixture
def limited(caller: Callable[[ToolContext], Call], workspace: Workspace, small_limits: SandboxConfig) -> Call:
    return caller(ToolContext(Workspace(workspace.root, small_limits), "presenter"))


async def test_command_cannot_write_past_the_file_size_limit(limited: Call, workspace: Workspace) -> None:
    obs = await limited("execute_command", command="head -c 5000000 /dev/zero > big.bin; echo status=$?")
    assert "status=0" not in obs.text
    assert (workspace.root / "big.bin").stat().st_size <= 1_000_000


async def test_command_memory_is_limited(limited: Call) -> None:
    obs = await limited("execute_command", command="python -c 'x = bytearray(1 << 30)' && echo allocated")
    assert "MemoryError" in obs.text and "allocated" not in obs.text


async def test_output_flood_is_capped(limited: Call, workspace: Workspace) -> None:
    started = time.perf_counter()
    obs = await limited("execute_command", command="yes flood | head -c 50000000; echo; echo done")
    assert time.perf_counter() - started < 5
    assert len(obs.text) < 2000 + 400 and "output cut" in obs.text
    saved = next((workspace.root / ".outputs").iterdir())
    assert saved.stat().st_size < 200_000 + 1000 and "more bytes of output were discarded" in saved.read_text()
    assert "file size limit" in saved.read_text()


async def test_endless_output_is_capped_and_stopped(limited: Call, workspace: Workspace) -> None:
    started = time.perf_counter()
    obs = await limited("execute_command", command="yes; echo after")
    assert time.perf_counter() - started < 5 and "after" not in obs.text
    assert max(p.stat().st_size for p in (workspace.root / ".outputs").iterdir()) < 200_000 + 1000


# ---------------------------------------------------------------- processes


async def test_timeout_kills_the_command_and_all_it_started(limited: Call) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.{os.getpid()}"  # a unique sleep argument
    command = f"sleep 3{marker} & (sleep 4{marker} &) ; setsid sleep 5{marker} & sleep 6{marker}"
    started = time.perf_counter()
    obs = await limited("execute_command", command=command)
    assert obs.is_error and "killed" in obs.text and time.perf_counter() - started < 1 + 2
    assert no_process_left(marker), [p.info["cmdline"] for p in live_processes(marker)]
    out = os.popen("ps -eo pid,pgid,stat,cmd").read()
    assert not [line for line in out.splitlines() if marker in line and " Z" not in line and "ps -eo" not in line]


async def test_background_jobs_do_not_outlive_a_finished_command(limited: Call) -> None:
    marker = f"7{uuid.uuid4().int % 10**6}"
    obs = await limited("execute_command", command=f"sleep {marker} & echo started")
    assert "[exit code 0]" in obs.text and "started" in obs.text
    assert no_process_left(marker)


async def test_cancelled_command_leaves_nothing(ctx: ToolContext) -> None:
    from agents.tools.command import execute_command

    marker = f"8{uuid.uuid4().int % 10**6}"
    task = asyncio.create_task(execute_command(ctx, command=f"sleep {marker}"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert no_process_left(marker)


async def test_environment_is_scrubbed(call: Call, workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AUTH_HEADER",
        "RANDOM_THING",
    ):
        monkeypatch.setenv(name, "leak-me")
    obs = await call("execute_command", command="env; pwd; echo home=$HOME")
    assert "leak-me" not in obs.text
    assert f"home={workspace.root}" in obs.text and f"\n{workspace.root}\n" in obs.text


# ---------------------------------------------------------------- downloads


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Every outgoing TCP connection attempt; any to a non-loopback address fails the test before it is made."""
    seen: list[tuple[str, int]] = []
    create_connection = asyncio.base_events.BaseEventLoop.create_connection
    connect = socket.socket.connect

    def guard(host: str | None, port: int | None) -> None:
        seen.append((str(host), port or 0))
        assert host in ("127.0.0.1", "localhost", "::1"), f"a connection to {host} was attempted"

    async def guarded_create_connection(self, protocol_factory, host=None, port=None, *args, **kwargs):
        guard(host, port)
        return await create_connection(self, protocol_factory, host, port, *args, **kwargs)

    def guarded_connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            guard(address[0], address[1])
        return connect(self, address)

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "create_connection", guarded_create_connection)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    yield seen


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/x",
        "http://192.168.1.1/x",
        "http://[::1]/x",
        "http://[::ffff:10.0.0.1]/x",
        "http://0.0.0.0/x",
        "http://100.64.0.1/x",
        "http://224.0.0.1/x",
        "http://localhost/x",
        "file:///etc/passwd",
        "ftp://example.com/x",
    ],
)
async def test_download_refuses_private_targets_without_connecting(
    call: Call, workspace: Workspace, connections: list, url: str
) -> None:
    obs = await call("download_file", url=url, path="x.bin")
    assert obs.is_error and ("refused" in obs.text or "only http" in obs.text), obs.text
    assert connections == [] and not (workspace.root / "x.bin").exists()


async def test_every_resolved_address_is_checked_and_the_request_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"mixed.example": ["93.184.216.34", "10.0.0.1"], "public.example": ["93.184.216.34"]}

    async def fake_getaddrinfo(self, host, port, **kwargs):  # the DNS boundary
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[host]]

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "getaddrinfo", fake_getaddrinfo)

    with pytest.raises(SandboxError, match="10.0.0.1"):
        await checked_request(httpx.URL("https://mixed.example/a"), SandboxConfig())
    request = await checked_request(httpx.URL("https://public.example:8443/a?b=1"), SandboxConfig())
    assert request.url.host == "93.184.216.34" and request.url.port == 8443 and request.url.query == b"b=1"
    assert request.headers["host"] == "public.example:8443"
    assert request.extensions["sni_hostname"] == "public.example"


def _webp() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), "red").save(out, format="WEBP")
    return out.getvalue()


def _redirect(location: str):
    async def handler(request: web.Request) -> web.Response:
        raise web.HTTPFound(location.format(port=request.url.port))

    return handler


def _body(data: bytes):
    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=data)

    return handler


@pytest.fixture
async def mirror() -> AsyncIterator[str]:
    """A loopback server: /img.webp, /big, and redirects to private addresses and to itself."""
    app = web.Application()
    app.router.add_get("/img.webp", _body(_webp()))
    app.router.add_get("/big", _body(b"x" * 300_000))
    app.router.add_get("/to-private", _redirect("http://10.0.0.1/secret"))
    app.router.add_get("/to-metadata", _redirect("http://169.254.169.254/latest/"))
    app.router.add_get("/to-localhost", _redirect("http://localhost:{port}/img.webp"))
    app.router.add_get("/to-self", _redirect("/img.webp"))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.fixture
def mirror_ctx(workspace: Workspace) -> ToolContext:
    cfg = SandboxConfig(allowed_hosts=["127.0.0.1"], max_download_bytes=100_000)
    return ToolContext(Workspace(workspace.root, cfg), "researcher")


@pytest.fixture
def download(caller: Callable[[ToolContext], Call], mirror_ctx: ToolContext) -> Call:
    return lambda url, path: caller(mirror_ctx)("download_file", url=url, path=path)


@pytest.mark.parametrize("route", ["/to-private", "/to-metadata", "/to-localhost"])
async def test_redirect_to_a_private_address_is_refused(
    mirror: str, download: Call, mirror_ctx: ToolContext, connections: list, route: str
) -> None:
    obs = await download(mirror + route, "assets/x.png")
    assert obs.is_error and "refused" in obs.text, obs.text
    assert {host for host, _ in connections} == {"127.0.0.1"}
    assert not (mirror_ctx.workspace.root / "assets").exists()


async def test_download_converts_webp_and_reports_size(mirror: str, download: Call, mirror_ctx: ToolContext) -> None:
    obs = await download(mirror + "/to-self", "assets/pic.webp")
    assert not obs.is_error and "64x48" in obs.text and "assets/pic.png" in obs.text, obs.text
    with Image.open(mirror_ctx.workspace.root / "assets/pic.png") as img:
        assert img.format == "PNG" and img.size == (64, 48)


async def test_download_size_is_capped(mirror: str, download: Call, mirror_ctx: ToolContext) -> None:
    obs = await download(mirror + "/big", "big.bin")
    assert obs.is_error and "limit" in obs.text and not (mirror_ctx.workspace.root / "big.bin").exists()


async def test_allow_private_addresses_lifts_the_check(mirror: str, caller: Callable, workspace: Workspace) -> None:
    ctx = ToolContext(Workspace(workspace.root, SandboxConfig(allow_private_addresses=True)), "researcher")
    assert not (await caller(ctx)("download_file", url=mirror + "/img.webp", path="a.webp")).is_error


@pytest.mark.parametrize("path", ["../escape.png", "/etc/escape.png", "link_dir/escape.png", ".", "assets"])
async def test_download_checks_the_save_path_before_fetching(
    mirror: str, download: Call, mirror_ctx: ToolContext, outside: Path, connections: list, path: str
) -> None:
    (mirror_ctx.workspace.root / "assets").mkdir()
    (mirror_ctx.workspace.root / "link_dir").symlink_to(outside)
    obs = await download(mirror + "/img.webp", path)
    assert obs.is_error and ("workspace" in obs.text or "folder" in obs.text), obs.text
    assert connections == [], "the URL was fetched before the path was refused"
