"""The render room's settings: the Chromium it starts and how many pages it keeps busy."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RenderJail(str, Enum):
    bubblewrap = "bubblewrap"  # no network, the system read-only, only the folders it renders (render/jail.py)
    none = "none"  # Chromium as this process's user, on this machine's network: choose it explicitly


@dataclass
class RenderConfig:
    jail: RenderJail = RenderJail.bubblewrap
    # The jailed browser's memory, all its processes together (render/memory.py: a cgroup, else RLIMIT_DATA per
    # process); 0: no cap. A slide that allocates past it loses its page, not the worker.
    memory_mb: int = 4096
    # Chromium's headless shell (Debian chromium-headless-shell, the build Playwright itself runs headless):
    # the same Blink as /usr/bin/chromium at about 35% more renders per second on this workload.
    chromium_path: str = "/usr/bin/chromium-headless-shell"
    # Renders in flight per worker process. Two rollout workers per 2-CPU machine (the local layout)
    # make 6 in all: with the agents' own work between renders that kept the CPUs as busy as 8 did
    # and spent ~3% less machine CPU per rollout (interleaved, 32 and 64 in flight: 2-5% more
    # rollouts per hour than 4 each, no change at 1 or 8); 8 each cost ~10-15% of the capacity.
    max_concurrent: int = 3
    max_pages: int = 8  # pages kept open for reuse
    timeout_s: float = 30.0
    device_scale_factor: float = 1.0
