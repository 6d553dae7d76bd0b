"""A bug of ours in a tool is not data: the rollout ends as environment/tool_crash, counted, and nothing is exported
from it. The session's scripted run (tests/pipeline/conftest.py) plants a TypeError in write_file for one rollout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.records import Rollout, read_parquet
from core.run.reader import RunReader

pytestmark = [pytest.mark.chromium, pytest.mark.slow]


def test_a_tool_that_raises_type_error_ends_its_rollout_as_tool_crash(scripted_synthesis: Path) -> None:
    root = scripted_synthesis
    rows = read_parquet(root / "rollouts.parquet", Rollout)
    crashed = [r for r in rows if r.status == "failed"]
    assert [r.failure for r in crashed] == ["environment/tool_crash:write_file"], [r.failure for r in rows]
    assert json.loads((root / "stats" / "rollouts.json").read_text())["tool_crashes"] == {"write_file": 1}
    assert "environment/tool_crash:write_file" in (root / "report" / "index.html").read_text()

    (trajectory,) = RunReader.open(root).trajectories(crashed[0])
    assert trajectory.steps[-1].error == "tool_crash:write_file"
    assert "TypeError" not in trajectory.to_json()  # the stack trace never reached the model's context
    worker_logs = "".join(p.read_text(errors="replace") for p in (root / "logs").glob("worker-*.log"))
    assert "tool write_file crashed" in worker_logs and "TypeError: planted bug" in worker_logs  # WARNING, with the stack

    exported = {json.loads(line)["task_id"] for split in ("train", "val") for line in (root / "sft" / f"{split}.jsonl").open()}
    assert exported and crashed[0].task_id not in exported
