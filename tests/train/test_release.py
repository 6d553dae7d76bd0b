"""The release: every trajectory of every rollout, one row each, with its outcome; read back by `datasets`."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import datasets
import pytest

from core.config import PROJECT_ROOT
from core.run.reader import RunReader
from fakes.runs import RolloutSpec, RunSpec, build_run, preference_run
from train import release
from train.config import ExportConfig
from train.release import release_run


@pytest.fixture
def run(tmp_path: Path) -> RunReader:
    return RunReader(build_run(tmp_path / "run", preference_run()))


def loaded(out_dir: Path) -> datasets.Dataset:
    return datasets.load_dataset("parquet", data_files=str(out_dir / "data" / "*.parquet"), split="train")


def test_one_row_per_trajectory_of_every_rollout_read_by_datasets(run: RunReader, monkeypatch) -> None:
    monkeypatch.setattr(release, "ROWS_PER_SHARD", 4)  # several shards
    report = release_run(run, ExportConfig())
    rows = loaded(report.out_dir)
    trajectories = sum(len(run.trajectory_files(r)) for r in run.rollouts())
    assert len(rows) == report.rows == trajectories == 2 * (2 + 2 + 1)  # a failed rollout has its researcher's only
    assert report.shards == 3 and len(list((report.out_dir / "data").glob("*.parquet"))) == 3
    by_outcome = Counter((r["rollout_id"].split("~")[-1] if "~" in r["rollout_id"] else "0", r["outcome"]) for r in rows)
    assert by_outcome == {("0", "accepted"): 4, ("1", "quality"): 4, ("2", "environment"): 2}
    assert Counter(f"{r['rollout_status']}/{r['trajectory_status']}" for r in rows) == {"done/finalized": 8, "failed/failed": 2}
    assert {r["task_id"] for r in rows} == {"task-0000", "task-0001"} and {r["replica"] for r in rows} == {0, 1, 2}


def test_a_row_says_why_with_verdicts_failure_defects_and_the_conversation(run: RunReader) -> None:
    report = release_run(run, ExportConfig())
    rows = {(r["rollout_id"], r["agent"]): r for r in loaded(report.out_dir)}
    rejected = rows[("task-0000~1", "presenter")]
    quality = next(v for v in rejected["verdicts"] if v["gate"] == "quality")
    assert not rejected["accepted"] and not quality["passed"] and quality["reasons"]
    assert rejected["outcome_reasons"] == quality["reasons"]
    failed = rows[("task-0000~2", "researcher")]
    assert failed["failure"] == "environment/timeout" and "ran out of time" in failed["failure_meaning"]
    assert [v["gate"] for v in failed["verdicts"]] == ["environment"]
    accepted = rows[("task-0000", "presenter")]
    assert accepted["accepted"] and accepted["instruction"] and accepted["prompt_tokens"] > 0
    messages = accepted["samples"][0]["messages"]
    assert messages[0]["role"] == "system" and any(m["role"] == "tool_call" for m in messages)
    images = [p for s in accepted["samples"] for p in s["images"]]
    assert images and all((report.out_dir / p).is_file() for p in images)
    assert "bytes per row" in (report.out_dir / "README.md").read_text()


def test_the_deck_s_measured_defects_are_released(tmp_path: Path) -> None:
    root = build_run(tmp_path / "run", RunSpec((RolloutSpec("task-0000", slides=2, broken_image=True),), steps=2))
    report = release_run(RunReader(root), ExportConfig())
    presenter = next(r for r in loaded(report.out_dir) if r["agent"] == "presenter")
    assert [(d["slide"], d["code"], d["severity"]) for d in presenter["deck_defects"]] == [(1, "broken_image", "critical")]


def test_what_cannot_be_read_is_counted_and_the_rest_released(run: RunReader) -> None:
    broken = next(f for f in run.trajectory_files(run.rollouts()[0]) if f.agent == "presenter")
    broken.path.write_bytes(b"not a trajectory")
    report = release_run(run, ExportConfig())
    assert report.rows == 9 and sum(report.unwritten.values()) == 1
    assert "1 |" in (report.out_dir / "README.md").read_text().split("## Left out")[1]


def test_the_cli_releases_a_run(run: RunReader) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "train.export", str(run.root), "--release"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "released 10 trajectories of 6 rollouts" in done.stdout
    assert len(loaded(run.path("release"))) == 10
