"""Stage 3, filters: every gate of `filters/` over every rollout (`filters.gates`), verdicts once each."""

from __future__ import annotations

import asyncio
from typing import Any

from core.records import Rollout, read_parquet
from core.run import RunContext
from filters.run import FilterRunConfig, judge_rollouts
from pipeline.stages import require_input, stage


@stage("filters")
def run_filters(ctx: RunContext) -> dict[str, Any]:
    rollouts = ctx.store.path("rollouts.parquet")
    if rollouts.is_file():  # else judge_rollouts says the rollouts stage must run first
        finished = [r for r in read_parquet(rollouts, Rollout) if r.status == "done"]
        why = f"every rollout failed; failures by category in {ctx.store.path('stats', 'rollouts.json')} and the report"
        require_input(ctx, "filters", len(finished), "finished rollouts", why)
    cfg = FilterRunConfig(ctx.cfg.filters, ctx.cfg.llm, ctx.cfg.roles, ctx.cfg.run)
    return asyncio.run(judge_rollouts(ctx.store, cfg))
