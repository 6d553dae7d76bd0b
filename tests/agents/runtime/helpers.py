"""What the sandbox and jail tests share: a folder's files as bytes, and the processes a command left running."""

from __future__ import annotations

import time
from pathlib import Path

import psutil


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


def live_processes(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in " ".join(proc.info["cmdline"] or ()) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def no_process_left(marker: str, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while live_processes(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
