"""The jail of execute_command: each command in its own bubblewrap sandbox (Debian `bubblewrap`).

Inside, a command sees a read-only system (/usr, /etc, this interpreter and its venv), a
private /tmp and /dev/shm (small tmpfs), a minimal /dev, a /proc of its own, and the
workspace: the only writable path, except the records the worker keeps there (RECORDS),
which are read-only. It runs in its own PID namespace, so nothing it starts outlives it
(setsid and double forks included: the namespace dies with its first process), without
network unless `SandboxConfig.command_network`, with no capabilities, and under the resource
limits (memory, file size, CPU time, processes) that prlimit sets inside the jail.

Who it runs as. A worker that is not root: bubblewrap makes a user namespace with uid 65534
inside for the worker's uid outside, and RLIMIT_NPROC counts the jail's processes. A root
worker: to the kernel a user namespace's uid mapped to root is root (RLIMIT_NPROC does not
bind it, root-only files stay readable), so bubblewrap runs privileged and the command drops
to a uid of its own (one of JAIL_UIDS per workspace: no name, no capabilities, no new
privileges); the workspace is handed to that uid before each command.

After a command, the symbolic links and special files it left in the workspace are removed:
the worker's own writes there (trajectories, the deck) would follow a link or block on a FIFO.
"""

from __future__ import annotations

import functools
import logging
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from agents.config import SandboxConfig
from core.config import ConfigError
from core.run.reader import TRAJECTORY_FILE
from render.memory import MemoryCap, memory_cap

log = logging.getLogger(__name__)

JAILS = ("bubblewrap", "none")
RECORDS = (
    ".outputs",
    ".research",
    "renders",
)  # folders the worker keeps (tool outputs, the attachments index, renders): read-only inside, made first
RECORD_FILES = TRAJECTORY_FILE.format(agent="*")  # read-only inside once they exist
# Debian reserves 65000-65533; all lie within the 65,536 uids a rootless container maps.
JAIL_UIDS = range(65000, 65534)
SANDBOX_UID = 65534  # what a non-root worker's commands are inside their user namespace
PROBE_TIMEOUT_S = 30.0
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # symlinks into /usr on a merged-/usr system
_KINDS = {
    stat.S_IFLNK: "symbolic link",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "device",
    stat.S_IFBLK: "device",
}


class JailUnavailable(ConfigError):
    """`tools.sandbox.jail=bubblewrap`, and bubblewrap cannot start a jail on this machine."""


def describe(cfg: SandboxConfig) -> str:
    """Which jail commands run in, as run stats and the report say it."""
    if cfg.jail == "none":
        return "none"
    return "bubblewrap, network on" if cfg.command_network else "bubblewrap"


def check_jail(cfg: SandboxConfig) -> None:
    """At startup: refuse (one line) a jail this machine cannot run; `jail=none` must be asked for."""
    if cfg.jail not in JAILS:
        raise ConfigError(f"tools.sandbox.jail={cfg.jail!r}: expected one of {', '.join(JAILS)}")
    if cfg.jail == "none":
        _warn_unjailed()
    else:
        _probe(cfg.command_network)


@functools.cache
def _warn_unjailed() -> None:
    log.warning("tools.sandbox.jail=none: execute_command runs commands without a jail, as this process's user")


@functools.cache
def _probe(network: bool) -> None:
    """Run `true` in a jail once per process (and network setting); JailUnavailable naming the cause."""
    fix = "install it (Debian package bubblewrap; scripts/install_system.sh) or set tools.sandbox.jail=none to run commands without a jail"
    if shutil.which("bwrap") is None:
        raise JailUnavailable(f"tools.sandbox.jail=bubblewrap: bwrap is not on PATH; {fix}")
    with tempfile.TemporaryDirectory(prefix="deckforge-jail-") as tmp:
        try:
            done = subprocess.run(
                prepare(SandboxConfig(command_network=network), Path(tmp), ["true"]),
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JailUnavailable(f"tools.sandbox.jail=bubblewrap: a jail did not start ({exc}); {fix}") from exc
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise JailUnavailable(f"tools.sandbox.jail=bubblewrap: bubblewrap cannot start a jail here ({why}); {fix}")


def limits(cfg: SandboxConfig) -> list[str]:
    """prlimit(1) (util-linux) setting the command's resource limits in the child.

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
    return [prlimit, *options, "--"]


def prepare(cfg: SandboxConfig, root: Path, command: list[str]) -> list[str]:
    """The argv of `command` run in `root` under the sandbox's limits, jailed unless `cfg.jail` is "none".

    For a jail this also readies the workspace (the records' folders made, a root worker's
    workspace handed to the jail's uid); call it with no other command running there."""
    limited = [*limits(cfg), *command]
    if cfg.jail == "none":
        return limited
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise JailUnavailable("tools.sandbox.jail=bubblewrap but bwrap is not on PATH (Debian package bubblewrap)")
    for name in RECORDS:
        (root / name).mkdir(exist_ok=True)
    if not _root_worker():
        who = ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        return [bwrap, *_binds(cfg, root), *who, "--", *limited]
    uid = str(jail_uid(root))
    _hand_over(root, int(uid))
    drop = [
        shutil.which("setpriv") or "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]
    return [bwrap, *_binds(cfg, root), "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", *drop, *limited]


def command_cap(cfg: SandboxConfig) -> MemoryCap:
    """A jailed command's memory, all its processes together (`command_memory_mb`): a cgroup where this worker can make
    one (render/memory.py), else none beyond each process's RLIMIT_AS (`limits`)."""
    if cfg.jail == "none":
        return MemoryCap("none")
    cap = memory_cap(cfg.command_memory_mb, "command")
    return cap if cap.cgroup is not None else MemoryCap("none")


def jail_uid(root: Path) -> int:
    """The uid a root worker's commands in `root` run as: one per workspace, so each jail has its own process cap."""
    return JAIL_UIDS[zlib.crc32(os.fsencode(root)) % len(JAIL_UIDS)]


def tidy(root: Path) -> list[str]:
    """Remove the symbolic links and special files a command left in the workspace; what was removed."""
    removed = []
    for fd, folder, name, st in _entries(root):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode))
        if kind is not None:
            os.unlink(name, dir_fd=fd)
            removed.append(f"{(folder / name).as_posix()} ({kind})")
    return removed


def _root_worker() -> bool:
    return os.geteuid() == 0


def _binds(cfg: SandboxConfig, root: Path) -> list[str]:
    made = set(_SYSTEM_MADE)
    options = list(_system(cfg.command_tmp_mb * 1024 * 1024))
    options += [*_parents(root, made), "--bind", str(root), str(root), "--chdir", str(root)]
    for record in _records(root):
        options += ["--ro-bind", str(record), str(record)]
    options += [
        "--remount-ro",
        "/",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    return options if cfg.command_network else [*options, "--unshare-net"]


def _records(root: Path) -> list[Path]:
    """The worker's records in `root` that are what they should be (folders, regular files, not links): bound read-only."""
    found = [root / name for name in RECORDS] + sorted(root.glob(RECORD_FILES))
    return [path for path in found if not path.is_symlink() and (path.is_dir() or path.is_file())]


_SYSTEM_MADE = ("/", "/usr", "/etc", "/dev", "/dev/shm", "/proc", "/tmp")  # what _system mounts (before the parents it makes)


@functools.cache
def _system(tmpfs_bytes: int) -> tuple[str, ...]:
    """The binds every jail shares: the system read-only, /dev, /proc, /tmp, this interpreter and its venv."""
    options = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in _SYSTEM_DIRS:
        path = Path("/", name)
        if path.is_symlink():
            options += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            options += ["--ro-bind", str(path), str(path)]
    size = ["--perms", "1777", "--size", str(tmpfs_bytes)]
    options += ["--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--proc", "/proc", *size, "--tmpfs", "/tmp"]
    made = set(_SYSTEM_MADE)
    for path in _python_paths():
        options += [*_parents(path, made), "--ro-bind", str(path), str(path)]
    return tuple(options)


def _python_paths() -> list[Path]:
    """This interpreter's prefixes (the venv, the installation it points to) not already under /usr."""
    found: list[Path] = []
    for prefix in sorted({Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)}):
        if not prefix.is_relative_to("/usr") and not any(prefix.is_relative_to(p) for p in found):
            found.append(prefix)
    return found


def _parents(path: Path, made: set[str]) -> list[str]:
    """The folders above `path` to make, mode 0755, for it to be bound (bubblewrap makes them 0700: closed to the jail's uid)."""
    options = []
    for parent in map(str, reversed(path.parents)):
        if parent not in made:
            options += ["--perms", "0755", "--dir", parent]
            made.add(parent)
    return options


def _hand_over(root: Path, uid: int) -> None:
    """Give the workspace (but the records) to the jail's uid, so its commands may change the agent's files."""
    if os.stat(root).st_uid != uid:
        os.chown(root, uid, uid)
    for fd, _, name, st in _entries(root):
        if st.st_uid != uid:
            os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)


def _entries(root: Path) -> Iterator[tuple[int, Path, str, os.stat_result]]:
    """(folder descriptor, folder relative to root, name, lstat) of everything under `root` but what the record
    folders hold (read-only in the jail), walked by descriptor without following links (os.fwalk): a link
    swapped in meanwhile leads nowhere."""
    for folder, dirs, files, fd in os.fwalk(root):
        relative = Path(folder).relative_to(root)
        for name in [*dirs, *files]:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield fd, relative, name, st
        if relative == Path("."):
            dirs[:] = [d for d in dirs if d not in RECORDS]
