"""Preference data: KTO labels from the run's acceptance, DPO pairs cut where two rollouts of a task part."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.cli import InputError
from core.config import PROJECT_ROOT
from core.run.reader import RunReader
from fakes.runs import RolloutSpec, RunSpec, build_run, preference_run
from train.config import ExportConfig
from train.preference import PreferenceFormat, export_preferences, parting
from train.samples import Sample, SwiftMessage

CFG = ExportConfig(val_fraction=0.0)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def sample(*messages: tuple[str, str]) -> Sample:
    return Sample("t", "presenter", "model", "[]", tuple(SwiftMessage(role, content) for role, content in messages))


HISTORY = (("system", "s"), ("user", "u"), ("assistant", "plan"), ("tool_call", "a"), ("tool_response", "ok"))


def test_a_pair_is_cut_after_the_first_agent_turn_where_they_part() -> None:
    chosen = sample(*HISTORY, ("assistant", "same"), ("tool_call", "good"), ("tool_response", "x"), ("tool_call", "more"))
    rejected = sample(*HISTORY, ("assistant", "same"), ("tool_call", "bad"), ("tool_response", "y"))
    good, bad = parting([chosen], [rejected])
    assert [m.content for m in good.messages] == [c for _, c in HISTORY] + ["same", "good"]  # the whole turn, from its start
    assert [m.content for m in bad.messages] == [c for _, c in HISTORY] + ["same", "bad"]


def test_no_pair_where_they_part_at_an_observation_or_do_not_part() -> None:
    chosen = sample(*HISTORY, ("tool_call", "next"))
    observed = sample(*HISTORY[:-1], ("tool_response", "other"), ("tool_call", "next"))
    assert parting([chosen], [observed]) == "they part at an observation, not at an agent turn"
    assert parting([chosen], [chosen]) == "identical conversations"
    assert parting([chosen], [sample(*HISTORY)]) == "one conversation is the other's beginning"
    other_tools = replace(sample(*HISTORY, ("tool_call", "else")), tools_json='[{"name": "x"}]')
    assert parting([chosen], [other_tools]) == "their tools differ"


def test_dpo_pairs_each_accepted_with_each_rejected_rollout_of_a_task_both_sides_checked(tmp_path: Path) -> None:
    run = RunReader(build_run(tmp_path / "run", preference_run(tasks=2, per_task=3)))
    report = export_preferences(run, CFG, PreferenceFormat.dpo)
    pairs = rows(report.out_dir / "train.jsonl")
    # per task: the accepted rollout against the rejected one (2 agents) and the failed one (its researcher)
    assert report.pairs_by_task == {"task-0000": 3, "task-0001": 3} and len(pairs) == 6
    assert {(p["chosen_rollout"], p["rejected_rollout"]) for p in pairs} == {
        (f"task-000{i}", f"task-000{i}~{k}") for i in (0, 1) for k in (1, 2)
    }
    for pair in pairs:
        turn = max(i for i, m in enumerate(pair["messages"]) if m["role"] not in ("assistant", "tool_call")) + 1
        history = pair["messages"][:turn]  # then the chosen agent turn
        assert pair["rejected_messages"][:turn] == history and pair["messages"][turn:] != pair["rejected_messages"][turn:]
        assert {m["role"] for m in pair["rejected_messages"][turn:]} <= {"assistant", "tool_call"}
        assert pair["rejected_tools"] == pair["tools"] and "rejected_images" in pair
    assert report.parity is not None and report.parity.ok and report.parity.samples == 2 * len(pairs)
    figures = json.loads(run.path("stats", "dpo.json").read_text())
    assert (figures["pairs"], figures["pairs_per_task"]) == (6, 3.0)


def test_a_task_whose_rollouts_all_failed_gives_no_pair_and_is_counted(tmp_path: Path) -> None:
    failed = RunSpec(
        (RolloutSpec("task-0009", failure="environment/timeout"), RolloutSpec("task-0009~1", failure="agent/gave_up"))
    )
    root = build_run(tmp_path / "run", preference_run(tasks=1))
    report = export_preferences(RunReader(build_run(root, failed)), CFG, PreferenceFormat.dpo)
    assert report.no_pair == {"no accepted rollout": 1} and set(report.pairs_by_task) == {"task-0000"}


def test_dpo_without_a_rejected_rollout_is_one_line_and_exit_2(tmp_path: Path) -> None:
    root = build_run(tmp_path / "run", RunSpec((RolloutSpec("task-0000"), RolloutSpec("task-0000~1")), steps=2))
    with pytest.raises(InputError, match="no rejected rollout"):
        export_preferences(RunReader(root), CFG, PreferenceFormat.dpo)
    done = subprocess.run(
        [sys.executable, "-m", "train.export", str(root), "--format", "dpo"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "no rejected rollout" in done.stderr
    assert not (root / "dpo").exists()


def test_kto_labels_every_decided_trajectory(tmp_path: Path) -> None:
    run = RunReader(build_run(tmp_path / "run", preference_run(tasks=2, per_task=3)))
    report = export_preferences(run, CFG, PreferenceFormat.kto)
    written = rows(report.out_dir / "train.jsonl")
    labels = {(r["task_id"], r["agent"], r["part"]): r["label"] for r in written}
    assert len(written) == report.labels[True] + report.labels[False] and report.labels[True] and report.labels[False]
    assert {k[0] for k, label in labels.items() if label} == {"task-0000", "task-0001"}  # the accepted rollouts only
    assert {k[0].split("~")[-1] for k, label in labels.items() if not label} == {"1", "2"}
    assert any(r["task_id"] == "task-0000~2" for r in written)  # a failed rollout's trajectory: an undesirable row
    assert report.parity is not None and report.parity.ok
