"""The report's figures on the wandb dashboard: the same `Figures` the static site shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.run.tracking import Tracker
from pipeline.report.figures import TABLE_FIELDS, Figures, RolloutRow, metrics

TABLE = "report/rollouts"
COLUMNS = ["task_id", "first_slide", *TABLE_FIELDS[1:]]


def track(tracker: Tracker, figures: Figures, covers: dict[str, Path]) -> None:
    """Summary scalars (see figures.metrics) and one table row per rollout, its first slide as an image."""
    if not tracker.enabled:
        return
    tracker.summary(metrics(figures))
    tracker.table(TABLE, COLUMNS, [_row(r, covers.get(r.task_id)) for r in figures.rows])


def _row(r: RolloutRow, cover: Path | None) -> list[Any]:
    return [r.task_id, cover, *(getattr(r, name) for name in TABLE_FIELDS[1:])]
