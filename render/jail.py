"""Chromium in a bubblewrap jail (`render.jail=bubblewrap`, the default): model-written HTML and JavaScript
run where they can reach nothing.

The browser's process tree sees the system read-only (/usr and /etc: programs, libraries, fonts), /dev,
/proc, a private /tmp and /dev/shm (its profile, its shared memory), and the folders it renders, read-only
(`Renderer(roots=...)`); nothing else of the filesystem exists there, so no file:// URL outside those
folders can be read, whatever the page pool's route handler decides. It has no network but a loopback of
its own (`--unshare-net`: WebSocket, WebRTC, DNS, every protocol), its own PID, IPC and UTS namespaces, and
an environment of HOME, PATH and LANG only (no API keys). Playwright starts it through a launcher script
that execs bwrap, so Playwright's pipe to the browser (its fds 3 and 4) passes into the jail. A worker that
is not root runs the browser as an unprivileged uid of its own user namespace, so Chromium's own sandbox
(namespaces and seccomp per renderer) starts inside too, where the kernel allows it (else the browser runs
without it, in the jail, with a warning: render/chromium.py); a root worker's does not (`sandboxed`).
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from core.config import ConfigError
from render.config import RenderConfig, RenderJail
from render.memory import MemoryCap

log = logging.getLogger(__name__)

BROWSER_UID = 1000  # who the browser is inside its namespace (this process's uid outside)
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # merged-/usr links (or folders) at /
FIX = "install it (Debian package bubblewrap; scripts/install_system.sh) or set render.jail=none to run Chromium without one"


class RenderJailUnavailable(ConfigError):
    """`render.jail=bubblewrap`, and bubblewrap cannot start a jail for Chromium on this machine."""


def jail_command(roots: Sequence[Path]) -> list[str]:
    """bwrap and its options, up to the `--` after which the program and its arguments follow."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RenderJailUnavailable(f"render.jail=bubblewrap: bwrap is not on PATH; {FIX}")
    options = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in SYSTEM_LINKS:
        path = Path("/", name)
        if path.is_symlink():
            options += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            options += ["--ro-bind", str(path), str(path)]
    options += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    for root in sorted({Path(r).resolve() for r in roots}):
        options += ["--ro-bind", str(root), str(root)]
    if sandboxed():  # an unprivileged uid of its own user namespace: Chromium's own sandbox then starts inside
        options += ["--unshare-user", "--uid", str(BROWSER_UID), "--gid", str(BROWSER_UID)]
    else:  # bwrap run by root keeps root's capabilities in the jail unless told otherwise: all but reading what it shows
        options += ["--cap-drop", "ALL", "--cap-add", "CAP_DAC_READ_SEARCH"]
    options += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
    options += ["--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8"]
    return [bwrap, *options, "--"]


def sandboxed() -> bool:
    """Whether Chromium's own sandbox runs in the jail: not for a root worker. Its rollouts' workspaces belong to
    the commands' jail uids, mode 0700 (agents/jail.py), which a browser in a user namespace of its own could not
    read; and Chromium refuses its sandbox to root. So a root worker's browser is uid 0 inside the jail with every
    capability dropped but CAP_DAC_READ_SEARCH (to read those workspaces: only what the jail shows), with
    `--no-sandbox`."""
    return os.geteuid() != 0


def launcher(cfg: RenderConfig, roots: Sequence[Path], folder: Path, cap: MemoryCap) -> str:
    """The executable Playwright starts as Chromium: `cfg.chromium_path` itself, or a script in `folder` that starts
    it in the jail under `cap`. RenderJailUnavailable (a config error: one line at startup) when the jail cannot start."""
    if RenderJail(cfg.jail) is RenderJail.none:
        _warn_unjailed()
        return cfg.chromium_path
    if not roots:
        raise ValueError("a jailed renderer needs the folders it renders: Renderer(roots=...)")
    command = jail_command(roots)
    _probe(tuple(jail_command(())))  # the same jail without the roots: once per process
    script = folder / "chromium"
    lines = ["#!/bin/sh", *cap.launch, f'exec {shlex.join([*cap.wrap, *command, cfg.chromium_path])} "$@"']
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script.chmod(0o700)
    return str(script)


@functools.cache
def _probe(command: tuple[str, ...]) -> None:
    """Start `true` in the jail once per process; RenderJailUnavailable naming why it cannot start."""
    try:
        done = subprocess.run([*command, "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RenderJailUnavailable(f"render.jail=bubblewrap: bwrap cannot start ({exc}); {FIX}") from exc
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise RenderJailUnavailable(f"render.jail=bubblewrap: bwrap cannot start a jail here ({why}); {FIX}")


@functools.cache
def _warn_unjailed() -> None:
    log.warning("render.jail=none: Chromium runs slides' HTML and JavaScript without a jail, on this machine's network")
