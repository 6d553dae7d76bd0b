"""One definition of accepted: finished, and every configured gate gave a verdict and passed."""

from __future__ import annotations

from pathlib import Path

import yaml

from core.records import Rollout
from core.run.reader import RunReader
from filters.acceptance import UNDECIDED, category_order, outcomes, run_gates
from filters.config import DEFAULT_GATES
from tests.filters.helpers import verdict

GATES = ("constraint", "consistency", "quality")


def test_each_rollout_counts_once_under_its_first_failing_category() -> None:
    rollouts = [Rollout(task_id=t, status="done") for t in ("a", "b", "c", "d", "e")] + [Rollout(task_id="f", status="failed")]
    verdicts = [
        *(verdict("a", g, True) for g in GATES),
        verdict("b", "constraint", True),
        verdict("b", "consistency", False),
        verdict("b", "quality", False),
        verdict("c", "constraint", False, "environment", "no deck"),
        verdict("c", "consistency", False),
        verdict("c", "quality", True),
        verdict("d", "constraint", True),
        verdict("d", "consistency", True),  # quality judge failed: no verdict yet
        verdict("e", "quality", False),
        verdict("e", "legacy_gate", False),  # a gate no longer configured does not count
        verdict("f", "environment", False, "environment", "environment/timeout"),
    ]
    found = {o.task_id: (o.category, o.reasons) for o in outcomes(rollouts, verdicts, GATES)}
    assert found == {
        "a": (None, ()),
        "b": ("consistency", ("why",)),
        "c": ("environment", ("no deck",)),
        "d": (UNDECIDED, ("no verdict from: quality",)),
        "e": ("quality", ("why",)),
        "f": ("environment", ("environment/timeout",)),
    }


def test_with_no_gates_every_finished_rollout_is_accepted_and_a_failed_one_never() -> None:
    rollouts = [
        Rollout(task_id="a", status="done"),
        Rollout(task_id="b", status="done"),
        Rollout(task_id="c", status="failed", failure="environment/timeout"),
    ]
    found = outcomes(rollouts, [verdict("b", "quality", False)], ())  # a verdict of a gate not configured does not count
    assert [(o.task_id, o.category) for o in found] == [("a", None), ("b", None), ("c", "environment")]
    assert found[2].reasons == ("environment/timeout",)  # rejected even before the filters wrote its verdict


def test_a_missing_verdict_is_undecided_never_accepted() -> None:
    rollouts = [Rollout(task_id="a", status="done")]
    assert [o.category for o in outcomes(rollouts, [], GATES)] == [UNDECIDED]
    assert not outcomes(rollouts, [verdict("a", "constraint", True)], GATES)[0].accepted


def test_content_checks_sit_between_the_rule_gate_and_the_judges() -> None:
    order = category_order(DEFAULT_GATES)
    assert order[:2] == ["environment", "constraint"] and order[-2:] == ["consistency", "quality"]
    assert order[2:-2] == [
        "duplicate_slides",
        "repeated_text",
        "truncated_text",
        "placeholder_text",
        "request_echo",
        "language_mix",
        "empty_slides",
    ]
    rollouts = [Rollout(task_id="a", status="done")]
    verdicts = [
        verdict("a", "quality", False),
        verdict("a", "content", False, "truncated_text"),
        verdict("a", "constraint", True),
    ]
    assert outcomes(rollouts, verdicts, DEFAULT_GATES)[0].category == "truncated_text"


def test_the_gates_come_from_the_run_config(tmp_path: Path) -> None:
    assert run_gates(RunReader(tmp_path)) == list(DEFAULT_GATES)  # no config.yaml: the defaults
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"filters": {"gates": []}}))
    assert run_gates(RunReader(tmp_path)) == []
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"filters": {"gates": ["constraint"]}, "run": {"name": "x"}}))
    assert run_gates(RunReader(tmp_path)) == ["constraint"]
