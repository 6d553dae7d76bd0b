"""Experiment tracking through wandb, behind one small interface.

`tracking.mode`: `offline` (default: files under the run directory, `wandb sync`
later), `online`, or `disabled` (nothing is logged; what tests use).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from core.config import TrackingConfig, TrackingMode

log = logging.getLogger(__name__)


class Tracker:
    def __init__(self, cfg: TrackingConfig, run_dir: Path, run_name: str, config: dict[str, Any], job_type: str):
        self.mode = TrackingMode(cfg.mode)
        self._run = None
        if self.mode is TrackingMode.disabled:
            return
        import wandb  # imported lazily: wandb's import costs about a second

        run_dir.mkdir(parents=True, exist_ok=True)
        self._run = wandb.init(
            project=cfg.project,
            entity=cfg.entity,
            name=run_name,
            job_type=job_type,
            tags=list(cfg.tags),
            config=config,
            dir=str(run_dir),
            mode=self.mode.value,
            reinit="finish_previous",
        )
        log.info("wandb %s run at %s", self.mode.value, self._run.dir)

    @property
    def enabled(self) -> bool:
        return self._run is not None

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        if self._run is not None:
            self._run.log(metrics, step=step)

    def summary(self, metrics: dict[str, Any]) -> None:
        if self._run is not None:
            self._run.summary.update(metrics)

    def table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        """Log a table; cells that are Paths to images become wandb.Image."""
        if self._run is None:
            return
        import wandb

        def cell(value: Any) -> Any:
            if isinstance(value, Path) and value.suffix.lower() in (".png", ".jpg", ".jpeg"):
                return wandb.Image(str(value))
            return value

        self._run.log({key: wandb.Table(columns=list(columns), data=[[cell(v) for v in row] for row in rows])})

    def finish(self) -> None:
        if self._run is not None:
            self._run.finish()
            self._run = None
