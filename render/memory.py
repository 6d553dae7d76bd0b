"""A memory cap for one jailed browser's process tree (`render.memory_mb`).

A cgroup where this process may make one (cgroup v2: `memory.max`; v1: `memory.limit_in_bytes`):
the whole tree shares the cap, and past it the kernel kills its largest process (a slide's
renderer), so the render fails and the page is replaced as after a hang, and the worker lives on.
Where no cgroup can be made (an unprivileged worker without a delegated cgroup), RLIMIT_DATA on
each of its processes (`prlimit`): an allocation past it fails inside the page instead. V8 and
PartitionAlloc reserve terabytes of address space without writing to it, which RLIMIT_AS counts
(Chromium does not start under it) and RLIMIT_DATA does not.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

CGROUP_V1 = Path("/sys/fs/cgroup/memory")
GROUP = "deckforge"
_names = itertools.count()


@dataclass(frozen=True)
class MemoryCap:
    how: str  # "cgroup v2", "cgroup v1", "rlimit" or "none": what the logs and docs say
    launch: tuple[str, ...] = ()  # shell lines the launcher runs before its exec
    wrap: tuple[str, ...] = ()  # the program the launcher execs through (prlimit ...)
    cgroup: Path | None = None

    def __enter__(self) -> MemoryCap:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def enter(self, argv: list[str]) -> list[str]:
        """`argv` run under the cap: joining the cgroup first, or through prlimit."""
        if self.launch:
            return ["/bin/sh", "-c", "; ".join([*self.launch, 'exec "$@"']), "sh", *argv]
        return [*self.wrap, *argv]

    def remove(self) -> None:
        """Remove the cgroup once its last processes are gone (waits up to 0.2 s for them; else leaves it, logged)."""
        if self.cgroup is None:
            return
        for _ in range(200):
            try:
                self.cgroup.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.001)
        log.warning("cgroup %s still has processes: left in place", self.cgroup)


def memory_cap(megabytes: int, kind: str = "chromium") -> MemoryCap:
    """The cap for one process tree (a browser, a command): the first of cgroup v2, cgroup v1 and RLIMIT_DATA that
    this process can set."""
    if megabytes <= 0:
        return MemoryCap("none")
    limit = megabytes * 1024 * 1024
    name = f"{kind}-{os.getpid()}-{next(_names)}"
    for how, folder, setting in (("cgroup v2", _cgroup2_root(), "memory.max"), ("cgroup v1", CGROUP_V1, "memory.limit_in_bytes")):
        if folder is None or not folder.is_dir():
            continue
        _sweep(folder)
        cgroup = folder / f"{GROUP}-{name}"  # a child of the hierarchy's root: v2 enables controllers level by level
        try:
            cgroup.mkdir()
            (cgroup / setting).write_text(str(limit))
        except OSError:
            _rmdir(cgroup)
            continue
        join = f"echo $$ > {shlex.quote(str(cgroup / 'cgroup.procs'))} || exit 1"
        return MemoryCap(how, launch=(join,), cgroup=cgroup)
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        log.warning("render.memory_mb=%d: no cgroup can be made here and prlimit is missing: Chromium runs uncapped", megabytes)
        return MemoryCap("none")
    return MemoryCap("rlimit", wrap=(prlimit, f"--data={limit}", "--"))


def _cgroup2_root() -> Path | None:
    """The cgroup2 mount whose children may hold the memory controller, if any."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        device, mount, kind, *_ = line.split()
        if kind == "cgroup2":
            root = Path(mount)
            enabled = root / "cgroup.subtree_control"
            if enabled.exists() and "memory" in enabled.read_text().split():
                return root
    return None


@functools.cache
def _sweep(folder: Path) -> None:
    """Remove the empty cgroups that processes gone before their cleanup left (`deckforge-<kind>-<pid>-<n>`); once a process."""
    for stale in folder.glob(f"{GROUP}-*-*-*"):
        pid = stale.name.rsplit("-", 2)[-2]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            _rmdir(stale)


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
