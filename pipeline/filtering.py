"""Stage 3, filters: every gate of `filters/` over every rollout (`filters.gates`), verdicts once each."""

from __future__ import annotations

import asyncio
from typing import Any

from core.run import RunContext
from filters.run import FilterRunConfig, judge_rollouts
from pipeline.stages import stage


@stage("filters")
def run_filters(ctx: RunContext) -> dict[str, Any]:
    cfg = FilterRunConfig(ctx.cfg.filters, ctx.cfg.llm, ctx.cfg.roles)
    return asyncio.run(judge_rollouts(ctx.store, cfg, ctx.meter))
