"""`python -m pipeline.synthesize`: tasks -> rollouts -> filters -> release -> export -> report.

`STAGES` is the recipe, in order; `stages=[rollouts,filters]` runs a part of it (each
stage keeps what it finished, so a rerun goes on where the last one stopped).
"""

from __future__ import annotations

import asyncio
from typing import Any

import hydra
from omegaconf import DictConfig

from core.records import RolloutStatus
from core.run.context import RunContext
from core.run.reader import RunReader
from filters.run import FilterRunConfig, judge_rollouts
from pipeline.config import store_schema
from pipeline.preflight import preflight
from pipeline.report.stage import run_report
from pipeline.rollouts import run_rollouts
from pipeline.stages import StageFn, require_input, run_stages
from pipeline.tasks import run_tasks
from train.export import export_run
from train.release import release_run


def run_filters(ctx: RunContext) -> dict[str, Any]:
    """Every gate of `filters.gates` over every finished rollout, one verdict per (rollout, gate)."""
    run = RunReader(ctx.store.root)
    if run.path("rollouts.parquet").is_file():  # else judge_rollouts says the rollouts stage must run first
        finished = [r for r in run.rollouts() if r.status == RolloutStatus.done]
        why = f"every rollout failed; failures by category in {run.path('stats', 'rollouts.json')} and the report"
        require_input(ctx, "filters", len(finished), "finished rollouts", why)
    cfg = FilterRunConfig(ctx.cfg.filters, ctx.cfg.llm, ctx.cfg.roles, ctx.cfg.run)
    return asyncio.run(judge_rollouts(run, cfg))


def run_export(ctx: RunContext) -> dict[str, Any]:
    """The accepted trajectories as MS-SWIFT agent-format JSONL in <run>/sft (train/export.py)."""
    figures = export_run(RunReader(ctx.store.root), ctx.cfg.export).figures()
    why = f"none of {figures['rollouts']} rollouts was accepted; reasons in {ctx.store.path('filters', 'failures.md')}"
    require_input(ctx, "export", figures["accepted"], "accepted rollouts", why)
    return figures


def run_release(ctx: RunContext) -> dict[str, Any]:
    """Every trajectory of every rollout with its outcome, as Parquet shards in <run>/release (train/release.py)."""
    figures = release_run(RunReader(ctx.store.root), ctx.cfg.export).figures()
    return {k: v for k, v in figures.items() if isinstance(v, int)}


STAGES: dict[str, StageFn] = {
    "tasks": run_tasks,  # personas and sources -> task specs with checkable constraints (pipeline/tasks.py)
    "rollouts": run_rollouts,  # each task -> Researcher + Presenter + critic on Ray workers (pipeline/rollouts.py)
    "filters": run_filters,  # each finished rollout -> one verdict per gate (filters/)
    "release": run_release,  # every trajectory with its verdicts -> Parquet shards (train/release.py)
    "export": run_export,  # accepted trajectories -> SFT data
    "report": run_report,  # the run's figures -> report/index.html (pipeline/report/)
}


@hydra.main(config_path="../configs", config_name="synthesize", version_base=None)
def main(cfg: DictConfig) -> None:
    run_stages(cfg, STAGES, "synthesize", preflight, cfg.stages)


if __name__ == "__main__":
    store_schema()  # configs/synthesize.yaml names it; Hydra composes when main is called
    main()
