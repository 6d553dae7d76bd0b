"""A stage that receives nothing stops the run with one line (exit 1), unless run.allow_empty=true."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.records import Task, write_parquet
from pipeline.rollouts import run_rollouts
from pipeline.stages import EmptyStage


def empty_tasks(root: Path) -> None:
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    write_parquet([], root / "tasks" / "train.parquet", Task)


def test_no_tasks_stops_the_rollouts_stage_naming_where_the_reasons_are(make_run) -> None:
    ctx = make_run()
    empty_tasks(ctx.store.root)
    with pytest.raises(EmptyStage, match=r"stage rollouts received 0 tasks: .*tasks/stats\.md"):
        run_rollouts(ctx)


def test_allow_empty_goes_on(make_run) -> None:
    ctx = make_run("run.allow_empty=true")
    empty_tasks(ctx.store.root)
    assert run_rollouts(ctx)["tasks"] == 0


def test_the_command_exits_1_with_one_line(tmp_path: Path) -> None:
    root = tmp_path / "run"
    empty_tasks(root)
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.synthesize", f"run.dir={root}", "stages=[rollouts,filters]", "tracking=disabled"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("python -m pipeline.synthesize: error:")]
    assert len(errors) == 1 and "stage rollouts received 0 tasks" in errors[0] and "Traceback" not in done.stderr
