"""The whole pipeline, scripted, with and without filtering: what the filters accept is what the export writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.records import Rollout, Verdict, read_parquet
from core.run.reader import RunReader
from filters.acceptance import outcomes, run_gates
from tests.pipeline.helpers import filter_and_export
from train.parity import tokenizer_dir
from train.validate import validate_file

pytestmark = [pytest.mark.chromium, pytest.mark.slow, pytest.mark.swift]


def trajectories(root: Path) -> int:
    """The trajectories the export made samples of (one or more parts each)."""
    rows = [json.loads(line) for split in ("train", "val") for line in (root / "sft" / f"{split}.jsonl").read_text().splitlines()]
    return len({(row["task_id"], row["agent"]) for row in rows})


def test_without_filters_every_finished_rollout_is_exported(scripted_rollouts: Path, tmp_path: Path) -> None:
    # the filtered run's tasks and rollouts (tests/pipeline/conftest.py), then the rest without filters: a config of
    # its own, hence run.resume=force
    root = filter_and_export(scripted_rollouts, tmp_path / "unfiltered", "filters=none", "run.resume=force")
    assert run_gates(RunReader(root)) == []
    finished = [r for r in read_parquet(root / "rollouts.parquet", Rollout) if r.status == "done"]
    assert finished
    assert trajectories(root) == 2 * len(finished)  # a researcher's and a presenter's samples per finished rollout


def test_with_the_default_filters_the_scripted_decks_pass_the_content_gate_and_are_exported(scripted_synthesis: Path) -> None:
    root = scripted_synthesis  # tests/pipeline/conftest.py: shared with test_report
    rollouts = read_parquet(root / "rollouts.parquet", Rollout)
    verdicts = read_parquet(root / "verdicts.parquet", Verdict)
    content = [v for v in verdicts if v.gate == "content"]
    assert content and all(v.passed for v in content), [v.reasons for v in content if not v.passed]
    accepted = [o for o in outcomes(rollouts, verdicts, run_gates(RunReader(root))) if o.accepted]
    assert trajectories(root) == 2 * len(accepted)
    # the labels of the scripted run's export, as MS-SWIFT encodes them: each tool-calling turn ends with a trained
    # <|observation|>; system, user and tool turns and images carry no loss (train/labels.py)
    validation = validate_file(root / "sft" / "train.jsonl", str(tokenizer_dir(None)))
    assert validation.ok and "labels checked" in validation.encode, validation.summary()
