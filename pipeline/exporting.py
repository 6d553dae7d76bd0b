"""Stage 4, export: accepted trajectories -> MS-SWIFT agent-format JSONL in <run>/sft (train/export.py)."""

from __future__ import annotations

from typing import Any

from core.run import RunContext
from pipeline.stages import require_input, stage
from train.export import export_run


@stage("export")
def run_export(ctx: RunContext) -> dict[str, Any]:
    figures = export_run(ctx.store.root, ctx.cfg.export).figures()
    why = f"none of {figures['rollouts']} rollouts was accepted; reasons in {ctx.store.path('filters', 'failures.md')}"
    require_input(ctx, "export", figures["accepted"], "accepted rollouts", why)
    return figures
