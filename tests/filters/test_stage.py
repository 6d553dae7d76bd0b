"""The filters as a stage of pipeline.synthesize: registered, configured by the run's config."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from core.records import Verdict
from core.run.context import RunContext
from filters.run import STAGE
from pipeline.synthesize import STAGES, run_filters

FORCE = "run.resume=force"  # the scenario's run was made with the builder's config: the stage's config replaces it


def test_pipeline_stage_with_no_gates_keeps_every_finished_rollout(
    make_run: Callable[..., RunContext], fake_scenario_run: Path
) -> None:
    assert STAGES["filters"] is run_filters
    ctx = make_run("filters=none", FORCE)
    assert ctx.store.root == fake_scenario_run  # make_run opens tmp_path/run, where the scenario was built
    figures = run_filters(ctx)
    assert figures == {
        "rollouts": 9,
        "accepted": 8,
        "undecided": 0,
        "rejected": 1,
        "verdicts_written": 1,
        "rejected_environment": 1,
    }
    assert [v.gate for v in ctx.store.load(STAGE, Verdict)] == ["environment"]
    assert "Gates: none (every finished rollout is kept)." in ctx.store.path("filters", "failures.md").read_text()


def test_pipeline_stage_with_the_default_gates_and_scripted_judges(
    make_run: Callable[..., RunContext], fake_scenario_run: Path
) -> None:
    ctx = make_run("filters.quality_images_per_call=4", FORCE)  # llm=scripted by default
    figures = run_filters(ctx)
    assert figures == {
        "rollouts": 9,
        "accepted": 3,
        "undecided": 0,
        "rejected": 6,
        "verdicts_written": 27,
        "rejected_consistency": 1,
        "rejected_constraint": 1,
        "rejected_duplicate_slides": 1,
        "rejected_environment": 2,
        "rejected_quality": 1,
        "judge_calls_skipped_consistency": 3,
        "judge_calls_skipped_quality": 3,
    }
    assert (ctx.store.root / "verdicts.parquet").is_file()
    assert run_filters(ctx)["verdicts_written"] == 0  # the stage reruns without committing anything twice
