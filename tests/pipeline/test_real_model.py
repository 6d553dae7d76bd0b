"""The entry points driven by a real model: SmolLM2-135M-Instruct behind llama-cpp-python's server (`llm=local`).

A model this small rarely finishes a deck; what these tests hold is that every rollout ends
with a status and a category within a few turns (the guards), that tokens are the server's
own counts, that a model on this machine costs nothing, that the records, report and export
stay valid, and that no server process outlives the command.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents.config import GuardConfig
from core.records import Rollout, Task, Trajectory, read_parquet, write_parquet
from core.run.reader import RunReader
from tests.local_servers import servers_running
from train.parity import check_run

pytestmark = [pytest.mark.real_model, pytest.mark.chromium, pytest.mark.slow, pytest.mark.timeout(1200)]

# Bounded so that the three commands take minutes: the guards end a 135M model within a few turns anyway (here
# sooner than by default: a reply cut at 64 tokens counts towards agent/rambling, 4 turns without progress (plus one
# per slide written) end an agent as agent/stalled). Most of a command's time is the server reading the first ~2,700-token prompt.
AGENT = [
    "llm=local",
    "llm.max_tokens=64",
    "agent.max_steps=8",
    "agent.guards.stall_turns=4",
]
LOCAL = [*AGENT, "tracking=disabled", "ray.num_workers=1"]
GUARD_LIMIT = max(
    GuardConfig().no_tool_call_turns, GuardConfig().repeated_call_turns, GuardConfig().cut_turns, GuardConfig().stall_turns
)


def run(*args: str, cwd: Path, timeout: int = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def ended_properly(trajectory: Trajectory) -> None:
    """A status and a failure category; no more turns after the last progress (agents/guards.py) than a guard allows."""
    assert trajectory.status in ("finalized", "failed"), trajectory.status
    if trajectory.status == "failed":
        category, _, kind = (trajectory.failure or "").partition("/")
        assert category in ("agent", "environment") and kind, trajectory.failure
    progressed = [s.index for s in trajectory.steps if s.progress]
    since = len(trajectory.steps) - 1 - progressed[-1] if progressed else len(trajectory.steps)
    assert since <= GUARD_LIMIT + 2, f"{trajectory.agent}: {since} turns after its last progress ({trajectory.failure})"


def usage_of(folder: Path) -> dict[str, dict]:
    """The model calls by role in `folder`/stats/usage.json (a run's ledger, or agents.run's one deck)."""
    usage = json.loads((folder / "stats" / "usage.json").read_text())["roles"]
    assert usage and all(u["estimated_calls"] == 0 and u["cost_usd"] == 0 for u in usage.values()), (
        usage
    )  # the server's counts, free
    return usage


def no_server_left(where: Path) -> bool:
    """No local model server the run started (each one's log, logs/local_server_N.log, names its address) still runs."""
    texts = [p.read_text(errors="replace") for p in where.rglob("local_server_*.log")]
    ports = {port for text in texts for port in re.findall(r"http://127\.0\.0\.1:(\d+)", text)}
    assert ports, "the run's logs name no local server"
    return not any(servers_running(f"--port {port} ") for port in ports)


def test_one_deck_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "deck"
    done = run(
        "agents.run",
        "A short talk on coral reef bleaching for high-school students",
        "--slides",
        "2",
        "--out",
        str(out),
        *AGENT,
        cwd=tmp_path,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: the model did not finish the deck, which it says
    trajectories = [Trajectory.from_json(p.read_text()) for p in sorted(out.glob("trajectory_*.json"))]
    assert trajectories
    for trajectory in trajectories:
        ended_properly(trajectory)
        assert trajectory.model == "smollm2-135m-instruct" and trajectory.policy == "model"
    assert usage_of(out)["agent"]["calls"] == sum(len(t.steps) for t in trajectories)
    assert "cost $0.0000" in done.stdout + done.stderr
    assert no_server_left(tmp_path)


@pytest.mark.swift  # the parity check encodes with MS-SWIFT's template
def test_synthesize_with_scripted_tasks_and_judges(tmp_path: Path) -> None:
    root = tmp_path / "run"
    done = run(
        "pipeline.synthesize",
        f"run.dir={root}",
        "limit=2",  # one train task (the other is the eval split's): one rollout
        *LOCAL,
        "roles.task_writer.backend=scripted",
        "roles.judge.backend=scripted",
        "roles.quality_judge.backend=scripted",
        "run.allow_empty=true",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rollouts = read_parquet(root / "rollouts.parquet", Rollout)
    assert rollouts and all(r.cost_usd == 0 for r in rollouts)
    for rollout in rollouts:
        assert rollout.status == "done" or rollout.failure.split("/")[0] in ("agent", "environment"), rollout.failure
        if rollout.failure == "environment/worker_died":  # its trajectories stop at their last checkpoint
            continue
        for path in root.glob(f"rollouts/{rollout.task_id}/trajectory_*.json"):
            ended_properly(Trajectory.from_json(path.read_text()))
    usage = usage_of(root)
    assert usage["agent"]["calls"] > 0 and "task_writer" not in usage and "judge" not in usage  # scripted roles make no calls
    stats = json.loads((root / "stats" / "rollouts.json").read_text())
    assert sum(stats["failures_by_category"].values()) == stats["failed"] and stats["cost_usd"] == 0
    verdicts = root / "verdicts.parquet"
    assert verdicts.is_file() and (root / "filters" / "failures.md").is_file()
    assert (root / "sft" / "train.jsonl").is_file() and (root / "report" / "index.html").is_file()
    assert no_server_left(root)
    # what SmolLM2 was sent, rebuilt from the records (the llama.cpp profile), is what its samples show, turn by turn
    parity = check_run(RunReader(root), every_trajectory=True)
    assert parity.ok and parity.turns_checked > 0 and parity.requests_verified == parity.turns_checked, parity.summary()


def test_eval_on_one_task(tmp_path: Path) -> None:
    tasks = tmp_path / "eval.parquet"
    write_parquet(
        [Task("persona-1", "persona", "A short talk on coral reefs for high-school students, 2 slides.", "en")], tasks, Task
    )
    root = tmp_path / "eval"
    done = run("eval.run", f"tasks={tasks}", f"run.dir={root}", "limit=1", *LOCAL, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (rollout,) = read_parquet(root / "rollouts.parquet", Rollout)
    assert rollout.cost_usd == 0 and (rollout.status == "done" or rollout.failure.split("/")[0] in ("agent", "environment"))
    for path in root.glob("rollouts/persona-1/trajectory_*.json"):
        ended_properly(Trajectory.from_json(path.read_text()))
    usage_of(root)
    assert (root / "scores" / "decks.csv").is_file()
    assert no_server_left(root)
