"""execute_command: a bash command in the workspace, jailed (agents/jail.py), under resource limits.

The environment is rebuilt from an allowlist (no keys, tokens or other secrets
pass; HOME is the workspace). Output goes to a temporary file that
RLIMIT_FSIZE bounds like any other file. A jailed command and all it started end
with its PID namespace; unjailed (`sandbox.jail=none`), its whole process group
is killed when it ends, times out or is cancelled (and any descendant that left
it while its parent was alive). Commands in one workspace run one at a time: a
jail readies the workspace before and tidies it after.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Annotated

import psutil
from pydantic import Field

from agents import jail
from agents.tools.registry import ROLES, Tool, ToolContext
from core.seams.steps import Observation

KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
KILL_GRACE_S = 5.0  # the call's own timeout, past the command's, only as a backstop


def command_env(root: Path) -> dict[str, str]:
    """The allowlisted environment; this interpreter's bin folder comes first on PATH."""
    env = {k: os.environ[k] for k in KEPT_VARIABLES if k in os.environ}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    env.update(HOME=str(root), PWD=str(root), PYTHONUNBUFFERED="1")
    return env


_turns: weakref.WeakValueDictionary[Path, asyncio.Lock] = weakref.WeakValueDictionary()


def _one_at_a_time(root: Path) -> asyncio.Lock:
    """The lock of a workspace's commands."""
    lock = _turns.get(root)
    if lock is None:
        lock = _turns[root] = asyncio.Lock()
    return lock


def _kill_all(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group, and its descendants that left the group while it still runs
    (a jail's whole PID namespace dies with its bubblewrap)."""
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


async def execute_command(
    ctx: ToolContext,
    command: Annotated[str, Field(min_length=1, description="A bash command line, run in the workspace folder.")],
) -> Observation:
    """Run a bash command in the workspace and return its exit code and output (stdout and stderr together)."""
    cfg, root = ctx.sandbox, ctx.workspace.root
    async with _one_at_a_time(root):
        # output: a file, not a pipe (a background job cannot hold the call open); cap: the memory of all it starts
        with tempfile.TemporaryFile() as output, jail.command_cap(cfg) as cap:
            proc = await asyncio.create_subprocess_exec(
                *cap.enter(jail.prepare(cfg, root, ["bash", "-c", command])),
                cwd=root,
                env=command_env(root),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            timed_out = False
            try:
                async with asyncio.timeout(cfg.command_timeout_s):
                    await proc.wait()
            except TimeoutError:
                timed_out = True
            finally:
                _kill_all(proc)
                await proc.wait()
                removed = jail.tidy(root) if cfg.jail != "none" else []
            size = os.fstat(output.fileno()).st_size
            output.seek(0)
            text = output.read(cfg.max_read_bytes).decode("utf-8", errors="replace")
    if size > cfg.max_read_bytes:
        text += f"\n[{size - cfg.max_read_bytes:,} more bytes of output were discarded]"
    if size >= cfg.max_write_bytes:
        text += f"\n[the command was stopped when its output reached the {cfg.max_write_bytes:,}-byte file size limit]"
    if removed:
        text += f"\n[removed from the workspace, which keeps only regular files and folders: {', '.join(removed)}]"
    if timed_out:
        return Observation(f"[killed: the command ran past its {cfg.command_timeout_s:g} s limit]\n{text}", is_error=True)
    return Observation(f"[exit code {proc.returncode}]\n{text}")


TOOLS = (Tool.from_function(execute_command, *ROLES, timeout_s=lambda cfg: cfg.command_timeout_s + KILL_GRACE_S),)
