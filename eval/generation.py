"""Eval stage 1: the held-out tasks played by the system under test, on the synthesis rollout machinery.

The tasks (after `limit`) are copied to `<run>/tasks/eval.parquet`. Before Ray starts or
a model is called, the judge's prompts must render, every non-scripted endpoint (agent,
describer, judge) must answer and the diversity encoder's config must load. Rollouts run on Ray workers through
`pipeline.rollouts.play` with `eval.runner:EvalRunner` (no critic): back-pressure,
exactly-once publishing to `units/rollouts/`, and a rerun plays only what is missing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from core.config import LLMConfig, resolve_role
from core.models import check_endpoints
from core.records import RolloutStatus, Task, read_parquet
from core.run import RunContext
from core.store import atomic_write_parquet
from eval.config import EvalConfig, tasks_file
from eval.diversity import check_encoder
from eval.judge import check_prompts
from eval.judging import judge_endpoints
from pipeline.rollouts import play
from pipeline.stages import require_input

STAGE = "eval/generate"
TASKS = ("tasks", "eval.parquet")


def endpoints(cfg: EvalConfig) -> dict[str, LLMConfig]:
    """The endpoints a run calls, by role."""
    return {"agent": resolve_role(cfg.llm, cfg.roles, "agent")} | judge_endpoints(cfg.judge)


def generate(ctx: RunContext) -> dict[str, Any]:
    cfg: EvalConfig = ctx.cfg
    split = read_parquet(tasks_file(cfg.tasks), Task)
    tasks = split[: cfg.limit] if cfg.limit else split
    require_input(ctx, STAGE, len(tasks), "tasks", f"{tasks_file(cfg.tasks)} holds none")
    atomic_write_parquet(tasks, ctx.store.path(*TASKS), Task)
    check_prompts()
    asyncio.run(check_endpoints(endpoints(cfg)))
    if cfg.diversity.encoder:
        check_encoder(cfg.diversity.encoder)
    feed, records, _ = play(ctx, tasks, len(split))
    finished = sum(r.status == RolloutStatus.done for r in records)
    return {
        "tasks": len(tasks),
        "played": len(feed.finished),
        "done": finished,
        "failed": len(records) - finished,
        "cost_usd": round(sum(r.cost_usd for r in records), 4),
    }
