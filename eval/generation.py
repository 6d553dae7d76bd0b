"""Eval stage 1: the held-out tasks played by the system under test, on the synthesis rollout machinery.

The tasks (after `limit`) are copied to `<run>/tasks/eval.parquet`. Before Ray starts or
a model is called, the judge's prompts must render, every non-scripted endpoint (agent,
describer, judge) must answer and the diversity encoder's config must load. Rollouts run on Ray workers through
`pipeline.rollouts.play` with `eval.runner:EvalRunner` (no critic): back-pressure,
exactly-once publishing to `units/rollouts/`, and a rerun plays only what is missing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.config import LLMConfig, resolve_role
from core.llm.players import check_endpoints
from core.records import RolloutStatus, Task, read_parquet
from core.run.context import RunContext
from core.run.reader import RunReader
from core.run.store import atomic_write_parquet
from eval.config import EvalConfig, presentbench_root
from eval.diversity import check_encoder
from eval.presentbench import read_cases
from eval.slide_judge import check_prompts, judge_endpoints
from pipeline.rollouts import play
from pipeline.stages import require_input

STAGE = "eval/generate"
EVAL_SPLIT = "eval"  # the held-out tasks are written to <run>/tasks/eval.parquet


def endpoints(cfg: EvalConfig) -> dict[str, LLMConfig]:
    """The endpoints a run calls, by role (the checklist judge calls the judge's)."""
    return {"agent": resolve_role(cfg.llm, cfg.roles, "agent")} | judge_endpoints(cfg.judge)


def held_out(tasks: str) -> list[Task]:
    """The tasks `tasks=` names: a synthesis run's eval split, a parquet's, or PresentBench's cases."""
    bench = presentbench_root(tasks)
    if bench:
        return [case.task for case in read_cases(bench)]
    path = Path(tasks).expanduser().resolve()
    return RunReader.open(path).split(EVAL_SPLIT) if path.is_dir() else read_parquet(path, Task)


def generate(ctx: RunContext) -> dict[str, Any]:
    cfg: EvalConfig = ctx.cfg
    split = held_out(cfg.tasks)
    tasks = split[: cfg.limit] if cfg.limit else split
    require_input(ctx, STAGE, len(tasks), "tasks", f"{cfg.tasks} holds none")
    atomic_write_parquet(tasks, ctx.store.path("tasks", f"{EVAL_SPLIT}.parquet"), Task)
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
