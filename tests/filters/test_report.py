"""The failure taxonomy (Figure 5) and the defect distribution."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from core.records import Rollout, Verdict
from filters.report import markdown, outcomes, write_report

GATES = ("constraint", "consistency", "quality")


def verdict(task_id: str, gate: str, passed: bool, category: str | None = None, reason: str = "why") -> Verdict:
    return Verdict(task_id=task_id, gate=gate, passed=passed, category=None if passed else category or gate, reasons=() if passed else (reason,))


def test_each_rollout_counts_once_under_its_first_failing_category() -> None:
    rollouts = [Rollout(task_id=t, status="done") for t in ("a", "b", "c", "d", "e")] + [Rollout(task_id="f", status="failed")]
    verdicts = [
        *(verdict("a", g, True) for g in GATES),
        verdict("b", "constraint", True), verdict("b", "consistency", False), verdict("b", "quality", False),
        verdict("c", "constraint", False, "environment", "no deck"), verdict("c", "consistency", False), verdict("c", "quality", True),
        verdict("d", "constraint", True), verdict("d", "consistency", True),  # quality judge failed: no verdict yet
        verdict("e", "quality", False), verdict("e", "legacy_gate", False),  # a gate no longer configured does not count
        verdict("f", "environment", False, "environment", "environment/timeout"),
    ]  # fmt: skip
    found = {o.task_id: (o.category, o.reasons) for o in outcomes(rollouts, verdicts, GATES)}
    assert found == {
        "a": (None, ()),
        "b": ("consistency", ("why",)),
        "c": ("environment", ("no deck",)),
        "d": ("undecided", ()),
        "e": ("quality", ("why",)),
        "f": ("environment", ("environment/timeout",)),
    }
    assert {o.task_id for o in outcomes(rollouts, verdicts, ()) if o.category is None} == {"a", "b", "c", "d", "e"}


def test_markdown_shares_paper_reference_and_defect_table() -> None:
    rollouts = [Rollout(task_id=t, status="done") for t in "abcd"]
    verdicts = [verdict("a", "quality", False, reason="slide 2 | overlap"), verdict("b", "quality", False), verdict("c", "constraint", False)]
    verdicts += [verdict(t, g, True) for t in "abcd" for g in GATES if not any(v.task_id == t and v.gate == g for v in verdicts)]
    text = markdown(outcomes(rollouts, verdicts, GATES), verdicts, GATES, Counter({("overlap", "critical"): 2, ("overlap", "minor"): 1}))
    assert text.splitlines()[0] == "# Filters: 4 rollouts, 1 accepted (25.0%), 3 rejected, 0 undecided"
    assert "| quality | 2 | 66.7% | 43.0% |" in text and "| constraint | 1 | 33.3% | 13.5% |" in text
    assert "| quality | 4 | 2 | 2 | 0 |" in text
    assert "| overlap | 2 | 0 | 1 | 3 |" in text
    assert "| a | quality | slide 2 \\| overlap |" in text


def test_report_files_with_nothing_to_show(tmp_path: Path) -> None:
    rollouts = [Rollout(task_id="a", status="done", artifacts={"defects": "rollouts/a/deck_defects.json"})]
    (tmp_path / "rollouts" / "a").mkdir(parents=True)
    (tmp_path / "rollouts" / "a" / "deck_defects.json").write_text(json.dumps({"aspect": "16:9", "slides": [{"png": "p.png", "defects": []}]}))
    write_report(tmp_path, rollouts, [], ())
    text = (tmp_path / "filters" / "failures.md").read_text()
    assert "1 accepted (100.0%)" in text and "No defects measured." in text and "## Rejected rollouts\n\nNone." in text
    assert all((tmp_path / "filters" / name).stat().st_size > 1000 for name in ("failures.png", "defects.png"))
