"""Eval stage 1: the held-out tasks played by the system under test, on the synthesis rollout machinery.

The tasks (after `limit`) are copied to `<run>/tasks/eval.parquet`. Before Ray starts or
a model is called, the judge's prompts must render, every non-scripted endpoint (agent,
describer, judge) must answer and the diversity encoder's config must load. Rollouts run on Ray workers through
`pipeline.rollouts.roll_out` with `eval.runner:EvalRunner` (no critic): back-pressure,
exactly-once publishing to `units/rollouts/`, and a rerun plays only what is missing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from core.config import LLMConfig, resolve_role
from core.ledger import spending_cap
from core.models import is_scripted
from core.records import Rollout, Task, read_parquet
from core.run import RunContext
from core.store import atomic_write_parquet
from eval.config import EvalConfig, tasks_file
from eval.diversity import check_encoder
from eval.judge import check_prompts
from eval.judging import check_endpoints, judge_endpoints
from pipeline.rollouts import STAGE as ROLLOUTS
from pipeline.rollouts import Feed, roll_out
from pipeline.spending import project_rollouts
from pipeline.stages import require_input, stage

log = logging.getLogger(__name__)

STAGE = "eval/generate"
TASKS = ("tasks", "eval.parquet")


def load_tasks(cfg: EvalConfig) -> list[Task]:
    tasks = read_parquet(tasks_file(cfg.tasks), Task)
    return tasks[: cfg.limit] if cfg.limit else tasks


def endpoints(cfg: EvalConfig) -> dict[str, LLMConfig]:
    """The model endpoints a run calls, by role (scripted ones left out)."""
    agent = resolve_role(cfg.llm, cfg.roles, "agent")
    return ({} if is_scripted(agent) else {"agent": agent}) | judge_endpoints(cfg.judge)


@stage(STAGE)
def generate(ctx: RunContext) -> dict[str, Any]:
    cfg: EvalConfig = ctx.cfg
    tasks = load_tasks(cfg)
    require_input(ctx, STAGE, len(tasks), "tasks", f"{tasks_file(cfg.tasks)} holds none")
    atomic_write_parquet(tasks, ctx.store.path(*TASKS), Task)
    check_prompts()
    asyncio.run(check_endpoints(endpoints(cfg)))
    if cfg.diversity.encoder:
        check_encoder(cfg.diversity.encoder)
    done = ctx.store.done(ROLLOUTS)
    todo = [t for t in tasks if t.task_id not in done]
    log.info("eval generation: %d tasks, %d already played, %d to play", len(tasks), len(tasks) - len(todo), len(todo))
    cap = spending_cap(cfg.run, ctx.store.root)
    if todo:
        project_rollouts(ctx.store.root, ROLLOUTS, len(tasks), len(todo), cap)
    feed = roll_out(ctx, todo, cap) if todo else Feed()
    ctx.store.compact(ROLLOUTS, Rollout)
    wanted = {t.task_id for t in tasks}
    records = [r for r in ctx.store.load(ROLLOUTS, Rollout) if r.task_id in wanted]
    finished = sum(r.status == "done" for r in records)
    return {
        "tasks": len(tasks),
        "played": len(feed.finished),
        "done": finished,
        "failed": len(records) - finished,
        "cost_usd": round(sum(r.cost_usd for r in records), 4),
    }
