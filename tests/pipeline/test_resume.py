"""A synthesis run SIGKILLed at random points, then rerun: every task exactly once, no corrupt file, every
finished rollout's model calls in the ledger once."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.records import Rollout, Task, read_parquet
from core.run.ledger import read_ledger

RUNNER = "rollouts.runner=fakes.runner:ScriptedRunner"


def command(run: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipeline.synthesize",
        f"run.dir={run}",
        "limit=24",
        "tracking=disabled",
        "stages=[tasks,rollouts]",
        RUNNER,
        "ray.num_workers=2",
        "ray.rollouts_per_worker=3",
        "ray.num_cpus_per_worker=0.5",
    ]


def units(run: Path) -> int:
    folder = run / "units" / "rollouts"
    return len(list(folder.glob("*.json"))) if folder.is_dir() else 0


@pytest.mark.slow
def test_kill_and_rerun_plays_every_task_once(tmp_path: Path) -> None:
    run, rng = tmp_path / "run", random.Random(3)
    root = Path(__file__).parents[2]
    kills = 0
    for _ in range(3):
        child = subprocess.Popen(
            command(run), cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        goal = units(run) + rng.randint(1, 5)
        deadline = time.monotonic() + 120
        while units(run) < goal and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)  # the driver dies at once; its Ray workers go with it
            kills += 1
        child.wait()
        subprocess.run(["pkill", "-9", "-f", f"run.dir={run}"], check=False)
    assert kills >= 1 and units(run) < 21
    final = subprocess.run(command(run), cwd=root, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr[-3000:]
    train = {t.task_id for t in read_parquet(run / "tasks" / "train.parquet", Task)}
    rows = read_parquet(run / "rollouts.parquet", Rollout)
    assert sorted(r.task_id for r in rows) == sorted(train)  # every task once, none twice
    for unit in (run / "units" / "rollouts").glob("*.json"):
        Rollout.from_json(unit.read_text())  # no torn file
    assert not list(run.rglob(".*.tmp"))
    assert json.loads((run / "stats" / "rollouts.json").read_text())["finished"] == len(train)
    # each fake rollout makes one call of 100 + 10 tokens: killed attempts left nothing, finished ones count once
    usage = json.loads((run / "stats" / "usage.json").read_text())["stages"]["rollouts"]["roles"]["agent"]
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (len(train), 100 * len(train), 10 * len(train))
    assert read_ledger(run).total().calls == len(train)
