"""Opening a run for any entry point: validated config, run store (its hash covering the prompt templates), logging, tracking."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.config import PROJECT_ROOT, ResumeMode, TrackingConfig, TrackingMode, run_dir, to_plain
from core.logs import setup_logging
from core.prompts import manifest
from core.run.store import RunStore
from core.run.tracking import Tracker

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    cfg: Any  # the entry point's typed config object (plain dataclasses, picklable for Ray)
    plain: dict[str, Any]  # the same, as resolved plain containers
    store: RunStore
    tracker: Tracker
    job_type: str = "run"

    def close(self) -> None:
        self.tracker.finish()


def prompt_folders(cfg: Any) -> list[Path]:
    """The template folders a run's config class names (`PROMPTS`, project-relative): its config hash covers them."""
    return [PROJECT_ROOT / folder for folder in getattr(type(cfg), "PROMPTS", ())]


def open_run(cfg: DictConfig, job_type: str) -> RunContext:
    """Create or continue the run directory named by `cfg.run`; refuses a config (or prompt template) change unless forced."""
    root = run_dir(cfg)
    setup_logging(root / "logs" / f"{job_type}.log")
    plain = to_plain(cfg)
    typed = OmegaConf.to_object(cfg)
    prompts = manifest(prompt_folders(typed))
    store = RunStore.open(root, plain, force=ResumeMode(cfg.run.resume) is ResumeMode.force, prompts=prompts)
    removed = store.clean_temp_files()
    if removed:
        log.info("removed %d temp file(s) left by an interrupted earlier run", removed)
    tracking = cfg.tracking if "tracking" in cfg else TrackingConfig(mode=TrackingMode.disabled)  # an entry point without wandb
    tracker = Tracker(tracking, root, cfg.run.name, plain, job_type)
    log.info("run %s at %s (config %s)", cfg.run.name, root, store.config_hash)
    return RunContext(typed, plain, store, tracker, job_type)
