"""The jail around execute_command, attacked through the tool API as a model would call it.

Each attack asserts that nothing outside the workspace changed or was reached, not just that
an error came back. Where it is safe to run unjailed, the same attack is played with
`sandbox.jail=none` as a control: there it succeeds, so each test can fail.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator

import psutil
import pytest
from aiohttp import web

from agents import jail
from agents.config import SandboxConfig
from agents.sandbox import Workspace
from agents.tools import ToolContext
from core.config import PROJECT_ROOT, ConfigError
from tests.agents.runtime.helpers import live_processes, no_process_left, snapshot

Call = Callable[..., Awaitable[Any]]
JAILED, UNJAILED = "bubblewrap", "none"
AS_ROOT = os.geteuid() == 0


def marker() -> str:
    return f"9{uuid.uuid4().int % 10**7}"


@pytest.fixture
def command(caller: Callable[[ToolContext], Call], workspace: Workspace) -> Callable[..., Awaitable[str]]:
    """`await command("ls", jail="none", command_network=True)`: the observation's text; jailed unless
    `jail="none"` is passed (whatever the configured default: some attacks must never run unjailed)."""

    async def run(line: str, **config: Any) -> str:
        cfg = SandboxConfig(**{"call_timeout_s": 20, "command_timeout_s": 10, "jail": JAILED, **config})
        obs = await caller(ToolContext(Workspace(workspace.root, cfg), "presenter"))("execute_command", command=line)
        return obs.text

    return run


# ---------------------------------------------------------------- files


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_writes_outside_the_workspace_change_nothing(command: Callable, outside: Path, kind: str) -> None:
    name = f"deckforge-attack-{marker()}"
    before = snapshot(outside)
    line = (
        f"cd / && touch /root/{name}; echo pwned > {outside}/secret.txt; touch {outside}/new /tmp/{name}; "
        f"rm -f {outside}/secret.txt; echo done"
    )
    try:
        text = await command(line, jail=kind)
        escaped = [Path("/root", name).exists(), Path("/tmp", name).exists(), snapshot(outside) != before]
    finally:
        for path in (Path("/root", name), Path("/tmp", name)):
            path.unlink(missing_ok=True)
    assert "done" in text
    assert escaped == ([False, False, False] if kind == JAILED else [AS_ROOT, True, True]), text


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_other_rollouts_workspaces_are_invisible(command: Callable, workspace: Workspace, kind: str) -> None:
    other = workspace.root.parent / "other_rollout"
    other.mkdir()
    (other / "secret.txt").write_text("top secret")
    text = await command(
        f"cat ../other_rollout/secret.txt {other}/secret.txt; ls ..; echo pwned >> {other}/secret.txt", jail=kind
    )
    assert (other / "secret.txt").read_text() == ("top secret" if kind == JAILED else "top secret" + "pwned\n")
    assert ("top secret" in text) is (kind == UNJAILED), text


async def test_records_of_the_worker_are_read_only(command: Callable, workspace: Workspace) -> None:
    root = workspace.root
    (root / ".outputs").mkdir()
    (root / ".outputs/execute_command_1.txt").write_text("saved output")
    (root / "renders").mkdir()
    (root / "renders/slide_01.1.png").write_bytes(b"png")
    (root / ".research").mkdir()
    (root / ".research/attachments.db").write_bytes(b"index")
    (root / "trajectory_researcher.json").write_text("{}")
    before = snapshot(root)
    text = await command(
        "echo forged > .outputs/execute_command_1.txt; echo forged > trajectory_researcher.json; touch renders/x;"
        " echo forged > .research/attachments.db; rm -rf .outputs .research renders trajectory_researcher.json;"
        " mv renders gone; echo done > mine.txt"
    )
    assert "Read-only file system" in text
    after = snapshot(root)
    assert after.pop("mine.txt") == b"done\n" and after == before


async def test_links_and_fifos_left_for_the_worker_are_removed(command: Callable, workspace: Workspace, outside: Path) -> None:
    """The worker writes deck_defects.json, trajectories and the deck itself, as root: a link left there would lead it out."""
    text = await command(
        f"ln -s {outside}/secret.txt deck_defects.json; mkfifo trajectory_presenter.json.tmp;"
        f" ln -s {outside}/secret.txt trajectory_single.json; mkdir -p slides && ln -s /etc slides/etc;"
        " echo '<html>' > slides/slide_01.html"
    )
    assert "removed from the workspace" in text and "deck_defects.json (symbolic link)" in text, text
    assert "trajectory_single.json (symbolic link)" in text  # else the next jail would bind its target read-only
    assert sorted(str(p.relative_to(workspace.root)) for p in workspace.root.rglob("*")) == [
        ".outputs",
        ".research",
        "renders",
        "slides",
        "slides/slide_01.html",
    ]
    (workspace.root / "deck_defects.json").write_text("{}")  # as the worker then writes it
    assert (outside / "secret.txt").read_text() == "top secret"


async def test_unjailed_commands_leave_their_links(command: Callable, workspace: Workspace, outside: Path) -> None:
    """The control of the test above: without the jail nothing tidies the workspace."""
    await command(f"ln -s {outside}/secret.txt deck_defects.json", jail=UNJAILED)
    assert (workspace.root / "deck_defects.json").is_symlink()


async def test_devices_and_privileges(command: Callable) -> None:
    text = await command(
        "echo dev: $(ls /dev); echo block: $(find / -xdev -type b 2>/dev/null); echo uid=$(id -u);"
        " grep CapEff /proc/self/status; cat /etc/shadow"
    )
    listed = set(re.search(r"^dev: (.*)$", text, re.MULTILINE).group(1).split())
    assert listed <= {
        "core",
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }, listed
    assert "\nblock:\n" in text and "uid=0\n" not in text and "CapEff:\t0000000000000000" in text
    assert "root:" not in text and "Permission denied" in text  # /etc/shadow


# ---------------------------------------------------------------- processes


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_nothing_it_starts_outlives_the_call(command: Callable, kind: str) -> None:
    tag = marker()
    line = f"setsid sleep 4{tag} & (sleep 5{tag} &) ; nohup sleep 6{tag} >/dev/null 2>&1 & disown; sleep 0.5; echo started"
    text = await command(line, jail=kind)
    try:
        assert "[exit code 0]" in text and "started" in text
        assert no_process_left(tag) is (kind == JAILED), [p.info["cmdline"] for p in live_processes(tag)]
    finally:
        for proc in live_processes(tag):
            proc.kill()


SPAWN = """python3 -c "
import subprocess
started = []
try:
    for _ in range(300):
        started.append(subprocess.Popen(['sleep', '{tag}']))
except OSError as exc:
    print('failed:', exc.strerror)
print('started', len(started))
" """


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_process_cap_holds_for_root_too(command: Callable, kind: str) -> None:
    tag = marker()
    text = await command(SPAWN.format(tag=tag), jail=kind, command_max_processes=40)
    try:
        started = int(re.search(r"started (\d+)", text).group(1))
        if kind == JAILED:
            assert started < 40 and "failed: Resource temporarily unavailable" in text, text
        elif AS_ROOT:  # the control: RLIMIT_NPROC alone does not bind root
            assert started == 300, text
        assert no_process_left(tag) or kind == UNJAILED
    finally:
        for proc in live_processes(tag):
            proc.kill()


HOGS = (
    "for i in 1 2 3; do python3 -c \"b = b'x' * (500 * 1024 * 1024); import time; time.sleep(2); print('held')\" & done;"
    " wait; echo end"
)


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_the_memory_cap_holds_for_all_of_a_commands_processes(command: Callable, kind: str) -> None:
    text = await command(HOGS, jail=kind, command_memory_mb=1024, command_timeout_s=20, call_timeout_s=30)
    assert "end" in text, text
    if kind == JAILED:  # 3 x 500 MB past the command's 1 GB: the kernel ends one or more
        assert text.splitlines().count("held") < 3, text
    else:  # the control: each process's RLIMIT_AS alone lets three 500 MB processes hold 1.5 GB
        assert text.splitlines().count("held") == 3, text


async def assert_in_a_pid_namespace(command: Callable) -> None:
    """Stop a test before an attack that would hurt the host unjailed, unless commands get a PID namespace of their own."""
    text = await command("echo pid=$$")
    pid = int(re.search(r"pid=(\d+)", text).group(1))
    if pid > 10:
        pytest.fail(f"commands do not run in a PID namespace of their own (bash is pid {pid}); the attack is not played")


async def test_fork_bomb_ends_with_the_call(command: Callable, workspace: Workspace) -> None:
    await assert_in_a_pid_namespace(command)
    started = time.perf_counter()
    await command(":(){ :|:& };:", command_max_processes=64, command_timeout_s=2)
    assert time.perf_counter() - started < 2 + 4
    uid = jail.jail_uid(workspace.root) if AS_ROOT else os.geteuid()
    deadline = time.monotonic() + 3
    while AS_ROOT and any(
        p.info["uids"] and p.info["uids"].real == uid for p in psutil.process_iter(["uids"])
    ):  # racing exits skipped
        assert time.monotonic() < deadline, "processes of the jail's uid are left"
        time.sleep(0.05)


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_the_worker_cannot_be_seen_or_signalled(command: Callable, kind: str) -> None:
    """Signals go only to the worker's own sentinel process (never a broadcast such as kill -1: the control runs unjailed)."""
    worker = os.getpid()
    sentinel = subprocess.Popen(["sleep", "60"])
    try:
        text = await command(
            f"cat /proc/{worker}/environ /proc/{sentinel.pid}/cmdline; kill -0 {worker} && echo reached;"
            f" kill -TERM {sentinel.pid}; echo count=$(ls /proc | grep -c '^[0-9]')",
            jail=kind,
        )
        seen = ["reached" in text, "PATH=" in text, sentinel.wait(timeout=2) if kind == UNJAILED else sentinel.poll()]
        assert seen == ([False, False, None] if kind == JAILED else [True, True, -15]), text
        assert (int(re.search(r"count=(\d+)", text).group(1)) < 10) is (kind == JAILED)  # the jail's own few processes
    finally:
        sentinel.kill()
        sentinel.wait()


# ---------------------------------------------------------------- network and sockets


@pytest.fixture
async def host_server() -> AsyncIterator[tuple[str, list[str]]]:
    """A loopback HTTP server on the host, recording every request it gets."""
    hits: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="host secret")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/", hits
    await runner.cleanup()


FETCH = "python3 -c \"import urllib.request as u; print(u.urlopen('{url}', timeout=3).read().decode())\"; exec 3<>/dev/tcp/127.0.0.1/{port} && echo tcp-open"


@pytest.mark.parametrize("kind,network,reached", [(JAILED, False, False), (JAILED, True, True), (UNJAILED, False, True)])
async def test_host_loopback_server_is_reached_only_with_network_on(
    command: Callable, host_server: tuple[str, list[str]], kind: str, network: bool, reached: bool
) -> None:
    url, hits = host_server
    text = await command(
        FETCH.format(url=url + "probe", port=url.rsplit(":", 1)[1].strip("/")), jail=kind, command_network=network
    )
    assert (hits == ["/probe"]) is reached and ("host secret" in text) is reached, (hits, text)


@pytest.fixture
def unix_servers(tmp_path: Path) -> Iterator[tuple[str, Path, Callable[[], list[str]]]]:
    """An abstract and a path Unix socket on the host; `accepted()` lists the connections each got."""
    abstract, path = f"deckforge-{marker()}", tmp_path / "outside.sock"
    servers = []
    for address, label in ((f"\0{abstract}", "abstract"), (str(path), "path")):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(address)
        server.listen()
        server.setblocking(False)
        servers.append((server, label))

    def accepted() -> list[str]:
        found = []
        for server, label in servers:
            try:
                server.accept()[0].close()
                found.append(label)
            except BlockingIOError:
                pass
        return found

    yield abstract, path, accepted
    for server, _ in servers:
        server.close()


CONNECT = """python3 -c "
import socket
for address in ('\\0{abstract}', '{path}'):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address); print('connected')
    except OSError as exc:
        print('failed:', exc.strerror)
" """


@pytest.mark.parametrize("kind", [JAILED, UNJAILED])
async def test_host_unix_sockets_are_unreachable(
    command: Callable, unix_servers: tuple[str, Path, Callable[[], list[str]]], kind: str
) -> None:
    abstract, path, accepted = unix_servers
    text = await command(CONNECT.format(abstract=abstract, path=path), jail=kind)
    assert accepted() == ([] if kind == JAILED else ["abstract", "path"]), text
    assert text.count("failed:") == (2 if kind == JAILED else 0), text


# ---------------------------------------------------------------- sizes and tools


async def test_private_tmp_is_small_and_thrown_away(command: Callable) -> None:
    """/tmp and /dev/shm live in memory: each is a tmpfs of `command_tmp_mb`, gone with the call."""
    tag = marker()
    fill = f"for i in $(seq 40); do head -c 1000000 /dev/zero > {{0}}/{tag}-$i || break; done; echo {{0}} $(cat {{0}}/{tag}-* | wc -c);"
    text = await command(fill.format("/tmp") + fill.format("/dev/shm"), command_tmp_mb=16)
    held = {folder: int(size) for folder, size in re.findall(r"^(/tmp|/dev/shm) (\d+)$", text, re.MULTILINE)}
    assert held.keys() == {"/tmp", "/dev/shm"} and max(held.values()) <= 16 * 2**20, text
    assert text.count("No space left on device") == 2 and not list(Path("/tmp").glob(f"{tag}-*"))


async def test_python_and_common_tools_work_inside(command: Callable, workspace: Workspace) -> None:
    (workspace.root / "data.csv").write_text("b,2\na,1\n")
    text = await command(
        "python3 -c 'import PIL, numpy; print(\"py\", numpy.add(1, 2))'; python -c 'import sys; print(sys.prefix)';"
        " sort data.csv | head -1; awk -F, '{s+=$2} END {print \"sum\", s}' data.csv; sed -i s/a/z/ data.csv; grep -c z data.csv;"
        " mkdir -p assets && cp data.csv assets/ && tar czf a.tgz assets && tar tzf a.tgz | wc -l; find . -name '*.csv' | wc -l;"
        " ls /tmp; echo home=$HOME"
    )
    assert "[exit code 0]" in text, text
    for expected in ("py 3", sys.prefix, "a,1", "sum 3", "\n1\n", "\n2\n", f"home={workspace.root}"):
        assert expected in text, (expected, text)
    assert (workspace.root / "data.csv").read_text() == "b,2\nz,1\n"


# ---------------------------------------------------------------- startup


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    jail._probe.cache_clear()
    yield
    jail._probe.cache_clear()


def test_jail_names_are_checked() -> None:
    with pytest.raises(ConfigError, match="tools.sandbox.jail='docker'"):
        jail.check_jail(SandboxConfig(jail="docker"))
    jail.check_jail(SandboxConfig(jail="none"))  # asked for explicitly: no probe


def _fake_bwrap(folder: Path, script: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "bwrap").write_text(f"#!/bin/sh\n{script}\n")
    (folder / "bwrap").chmod(0o755)


@pytest.mark.parametrize(
    "script,reason",
    [
        (None, "bwrap is not on PATH"),
        ("echo 'bwrap: No permissions to create new namespace' >&2; exit 1", "No permissions to create new namespace"),
    ],
)
def test_a_jail_that_cannot_start_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None, script: str | None, reason: str
) -> None:
    if script:
        _fake_bwrap(tmp_path / "bin", script)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin" if script else str(tmp_path))
    with pytest.raises(jail.JailUnavailable) as caught:
        jail.check_jail(SandboxConfig())
    message = str(caught.value)
    assert reason in message and "tools.sandbox.jail=none" in message and "\n" not in message


def test_entry_points_refuse_at_startup_without_a_jail(tmp_path: Path) -> None:
    _fake_bwrap(tmp_path / "bin", "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(PROJECT_ROOT)}
    for argv in (
        ["pipeline.synthesize", f"run.dir={tmp_path / 'run'}", "tracking=disabled"],
        ["agents.run", "A talk on tides", "--out", str(tmp_path / "deck"), "llm=scripted"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", *argv], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.strip().count("\n") == 0 and "setting up uid map: Permission denied" in done.stderr, done.stderr
        assert not (tmp_path / "deck" / "trajectory_researcher.json").exists()
