"""A bug of ours in a tool is not data: the rollout ends as environment/tool_crash, counted, and nothing is exported from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from core.records import Rollout, read_parquet
from tests.pipeline.test_acceptance_e2e import ENV

pytestmark = [pytest.mark.chromium, pytest.mark.slow]


def test_a_tool_that_raises_type_error_ends_its_rollout_as_tool_crash(tmp_path: Path) -> None:
    root = tmp_path / "run"
    command = [
        *(sys.executable, "-m", "pipeline.synthesize", f"run.dir={root}", "limit=3", "tracking=disabled"),
        *("rollouts.runner=tests.pipeline.fake_runner:BrokenToolRunner", "ray.num_workers=1", "ray.rollouts_per_worker=1"),
    ]
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    rows = {r.task_id: r for r in read_parquet(root / "rollouts.parquet", Rollout)}
    crashed = [r for r in rows.values() if r.status == "failed"]
    assert [r.failure for r in crashed] == ["environment/tool_crash:write_file"], [r.failure for r in rows.values()]
    assert json.loads((root / "stats" / "rollouts.json").read_text())["tool_crashes"] == {"write_file": 1}
    assert "environment/tool_crash:write_file" in (root / "report" / "index.html").read_text()

    trajectory = json.loads((root / crashed[0].artifacts["trajectory:researcher"]).read_text())
    assert trajectory["steps"][-1]["error"] == "tool_crash:write_file"
    assert "TypeError" not in json.dumps(trajectory["messages"])  # the stack trace never reached the model's context
    worker_logs = "".join(p.read_text(errors="replace") for p in (root / "logs").rglob("*") if p.is_file())
    assert "tool write_file crashed" in worker_logs and "planted bug" in worker_logs  # logged at WARNING with the stack

    exported = [
        json.loads(line) for split in ("train", "val") for line in (root / "sft" / f"{split}.jsonl").read_text().splitlines()
    ]
    assert exported and crashed[0].task_id not in {row["task_id"] for row in exported}
