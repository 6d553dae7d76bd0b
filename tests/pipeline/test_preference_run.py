"""A scripted run with rollouts.per_task=3, some rollouts failed on purpose (fakes.runner.FlawedRunner: a sentence
planted on every slide, a crashing tool): its release has a row per trajectory, and its KTO and DPO data validate with MS-SWIFT."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import datasets
import pytest

from core.run.reader import RunReader
from tests.pipeline.helpers import synthesize_scripted
from train.config import ExportConfig
from train.parity import tokenizer_dir
from train.preference import PreferenceFormat, export_preferences
from train.validate import validate_file

pytestmark = [pytest.mark.chromium, pytest.mark.swift, pytest.mark.slow]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunReader:
    root = tmp_path_factory.mktemp("per-task") / "run"
    synthesize_scripted(
        root, "rollouts.per_task=3", "rollouts.runner=fakes.runner:FlawedRunner", "stages=[tasks,rollouts,filters,release]"
    )
    return RunReader(root)


def test_the_release_has_a_row_for_every_trajectory_by_status(run: RunReader) -> None:
    rows = datasets.load_dataset("parquet", data_files=str(run.path("release", "data", "*.parquet")), split="train")
    rollouts = run.rollouts()
    assert len(rollouts) == 6  # limit=3: 2 training tasks (and an eval one), 3 rollouts each
    trajectories = Counter(f.agent for r in rollouts for f in run.trajectory_files(r))
    assert Counter(rows["agent"]) == trajectories
    outcome = {(r["rollout_id"].rpartition("~")[2] if "~" in r["rollout_id"] else "0", r["outcome"]) for r in rows}
    assert {o for k, o in outcome if k == "0"} == {"accepted"} and {o for k, o in outcome if k == "2"} == {"environment"}
    assert {o for k, o in outcome if k == "1"} & {"consistency", "repeated_text"}  # a gate, on the planted sentence
    crashed = [r for r in rows if r["rollout_id"].endswith("~2")]
    assert all(r["failure"].startswith("environment/tool_crash") and r["failure_meaning"] for r in crashed)
    repeated = [r for r in rows if r["rollout_id"].endswith("~1")]
    assert all(any(not v["passed"] and v["reasons"] for v in r["verdicts"]) for r in repeated)


@pytest.mark.parametrize("fmt", list(PreferenceFormat))
def test_kto_and_dpo_validate_with_ms_swift_and_parity_holds(run: RunReader, fmt: PreferenceFormat, tmp_path: Path) -> None:
    report = export_preferences(run, ExportConfig(out_dir=str(tmp_path / fmt.value), val_fraction=0.0), fmt)
    assert report.parity is not None and report.parity.ok and report.parity.turns_checked
    if fmt is PreferenceFormat.dpo:
        assert sum(report.pairs_by_task.values()) >= 2 and report.parity.samples == 2 * sum(report.pairs_by_task.values())
    else:
        assert report.labels[True] and report.labels[False]
    validated = validate_file(tmp_path / fmt.value / "train.jsonl", str(tokenizer_dir(None)))
    assert validated.ok, validated.summary()
