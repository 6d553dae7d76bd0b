"""Opening a run for any entry point: validated config, run store, logging, tracking, usage."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.config import ResumeMode, TrackingConfig, TrackingMode, run_dir, to_plain
from core.llm import UsageMeter
from core.logs import setup_logging
from core.store import RunStore
from core.tracking import Tracker

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    cfg: Any  # the entry point's typed config object (plain dataclasses, picklable for Ray)
    plain: dict[str, Any]  # the same, as resolved plain containers
    store: RunStore
    tracker: Tracker
    job_type: str = "run"
    meter: UsageMeter = field(default_factory=UsageMeter)
    started: float = field(default_factory=time.time)

    def close(self) -> None:
        """Write this invocation's model usage to logs/usage_<job>_<time>.json, and to the tracker."""
        self.meter.write(self.store.path("logs", f"usage_{self.job_type}_{time.strftime('%Y%m%d-%H%M%S', time.localtime(self.started))}.json"))
        self.tracker.summary({f"usage/{role}/{k}": v for role, d in self.meter.snapshot().items() for k, v in d.items() if k != "failures"})
        self.tracker.finish()


def open_run(cfg: DictConfig, job_type: str) -> RunContext:
    """Create or continue the run directory named by `cfg.run`; refuses a config change unless forced."""
    root = run_dir(cfg)
    setup_logging(root / "logs" / f"{job_type}.log")
    plain = to_plain(cfg)
    store = RunStore.open(root, plain, force=ResumeMode(cfg.run.resume) is ResumeMode.force)
    removed = store.clean_temp_files()
    if removed:
        log.info("removed %d temp file(s) left by an interrupted earlier run", removed)
    tracking = cfg.tracking if "tracking" in cfg else TrackingConfig(mode=TrackingMode.disabled)  # an entry point without wandb
    tracker = Tracker(tracking, root, cfg.run.name, plain, job_type)
    log.info("run %s at %s (config %s)", cfg.run.name, root, store.config_hash)
    return RunContext(OmegaConf.to_object(cfg), plain, store, tracker, job_type)
