"""execute_command: a bash command in the workspace, in its own session, under resource limits.

The environment is rebuilt from an allowlist (no keys, tokens or other secrets
pass; HOME is the workspace). Output goes to a temporary file that
RLIMIT_FSIZE bounds like any other file. When the command ends, times out or
is cancelled, its whole process group is killed (and any descendant that left
it while its parent was alive), so nothing it started outlives the call.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import psutil
from pydantic import Field

from agents.config import SandboxConfig
from agents.tools.registry import ROLES, Observation, ToolContext, tool

KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
KILL_GRACE_S = 5.0  # the call's own timeout, past the command's, only as a backstop


def command_env(root: Path) -> dict[str, str]:
    """The allowlisted environment; this interpreter's bin folder comes first on PATH."""
    env = {k: os.environ[k] for k in KEPT_VARIABLES if k in os.environ}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    env.update(HOME=str(root), PWD=str(root), PYTHONUNBUFFERED="1")
    return env


def limited(cfg: SandboxConfig, argv: list[str]) -> list[str]:
    """`argv` run under the sandbox's resource limits, set by prlimit(1) (util-linux) in the child.

    Setting them in a preexec_fn would force a full fork() of the worker (about 7 ms of its CPU
    per command for a 500 MB process); with prlimit the child is spawned with vfork.
    """
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise RuntimeError("execute_command needs prlimit (Debian package util-linux) on PATH to limit commands")
    wanted = {
        "as": (resource.RLIMIT_AS, cfg.command_memory_mb * 1024 * 1024),
        "fsize": (resource.RLIMIT_FSIZE, cfg.max_write_bytes),
        "nproc": (resource.RLIMIT_NPROC, cfg.command_max_processes),
        "cpu": (resource.RLIMIT_CPU, int(cfg.command_timeout_s) + 1),
    }
    options = []
    for name, (kind, value) in wanted.items():
        _, hard = resource.getrlimit(kind)  # the child inherits this hard limit and may not raise it
        options.append(f"--{name}={value if hard == resource.RLIM_INFINITY else min(value, hard)}")
    return [prlimit, *options, "--", *argv]


def _kill_all(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group, and its descendants that left the group while it still runs."""
    strays = []
    if proc.returncode is None:  # not yet reaped, so its pid cannot have been reused
        try:
            strays = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for stray in strays:
        try:
            stray.kill()
        except psutil.NoSuchProcess:
            pass


@tool(*ROLES, timeout_s=lambda cfg: cfg.command_timeout_s + KILL_GRACE_S)
async def execute_command(
    ctx: ToolContext,
    command: Annotated[str, Field(min_length=1, description="A bash command line, run in the workspace folder.")],
) -> Observation:
    """Run a bash command in the workspace and return its exit code and output (stdout and stderr together)."""
    cfg = ctx.sandbox
    with tempfile.TemporaryFile() as output:  # a file, not a pipe: a background job cannot hold the call open
        proc = await asyncio.create_subprocess_exec(
            *limited(cfg, ["bash", "-c", command]),
            cwd=ctx.workspace.root, env=command_env(ctx.workspace.root),
            stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        timed_out = False
        try:
            async with asyncio.timeout(cfg.command_timeout_s):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        finally:
            _kill_all(proc)
            await proc.wait()
        size = os.fstat(output.fileno()).st_size
        output.seek(0)
        text = output.read(cfg.max_read_bytes).decode("utf-8", errors="replace")
    if size > cfg.max_read_bytes:
        text += f"\n[{size - cfg.max_read_bytes:,} more bytes of output were discarded]"
    if size >= cfg.max_write_bytes:
        text += f"\n[the command was stopped when its output reached the {cfg.max_write_bytes:,}-byte file size limit]"
    if timed_out:
        return Observation(f"[killed: the command ran past its {cfg.command_timeout_s:g} s limit]\n{text}", is_error=True)
    return Observation(f"[exit code {proc.returncode}]\n{text}")
