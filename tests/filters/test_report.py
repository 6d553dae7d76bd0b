"""The failure taxonomy (Figure 5) and the defect distribution."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from core.records import Rollout, Verdict
from core.run.reader import RunReader
from filters.acceptance import outcomes
from filters.report import REJECTED_ROWS, markdown, tally, write_report
from tests.filters.helpers import verdict

GATES = ("constraint", "consistency", "quality")


def test_markdown_shares_paper_reference_and_defect_table() -> None:
    rollouts = [Rollout(task_id=t, status="done") for t in "abcd"]
    verdicts = [
        verdict("a", "quality", False, reason="slide 2 | overlap"),
        verdict("b", "quality", False),
        verdict("c", "constraint", False),
    ]
    verdicts += [verdict(t, g, True) for t in "abcd" for g in GATES if not any(v.task_id == t and v.gate == g for v in verdicts)]
    measured = {"a": [("overlap", "critical"), ("overlap", "minor")], "b": [("overlap", "critical")]}
    text = markdown(tally(rollouts, verdicts, GATES, lambda r: measured.get(r.task_id, [])))
    assert text.splitlines()[0] == "# Filters: 4 rollouts, 1 accepted (25.0%), 3 rejected, 0 undecided"
    assert "| quality | 2 | 66.7% | 43.0% |" in text and "| constraint | 1 | 33.3% | 13.5% |" in text
    assert "| quality | 4 | 2 | 2 | 0 |" in text
    assert "| overlap | 2 | 0 | 1 | 3 |" in text
    assert "| a | quality | slide 2 \\| overlap |" in text
    assert "## Content checks" not in text  # no content gate configured


def test_each_content_check_is_its_own_failure_category(tmp_path: Path) -> None:
    gates = ("constraint", "content", "quality")
    rollouts = [Rollout(task_id=t, status="done") for t in "abc"]
    content = [
        Verdict(
            task_id="a",
            gate="content",
            passed=False,
            category="duplicate_slides",
            reasons=("duplicate_slides: slides 2 and 3 (100% alike)", "truncated_text: cut text: slide 4"),
        ),
        Verdict(task_id="b", gate="content", passed=False, category="request_echo", reasons=("request_echo: slide 1",)),
        Verdict(task_id="c", gate="content", passed=True),
    ]
    verdicts = content + [verdict(t, g, True) for t in "abc" for g in ("constraint", "quality")]
    assert [o.category for o in outcomes(rollouts, verdicts, gates)] == ["duplicate_slides", "request_echo", None]
    counted = write_report(RunReader(tmp_path), rollouts, verdicts, gates)
    assert counted.outcomes == Counter({"duplicate_slides": 1, "request_echo": 1, None: 1})
    text = (tmp_path / "filters" / "failures.md").read_text()
    order = [line.split(" | ")[0].strip("| ") for line in text.splitlines() if line.startswith("| ") and " | - |" in line]
    assert order[:7] == [
        "duplicate_slides",
        "repeated_text",
        "truncated_text",
        "placeholder_text",
        "request_echo",
        "language_mix",
        "empty_slides",
    ]
    assert "| duplicate_slides | 1 | 50.0% | - |" in text and "| request_echo | 1 | 50.0% | - |" in text
    assert "| truncated_text | 1 |" in text.split("## Content checks")[1]  # a deck may fail several checks


def test_report_files_with_nothing_to_show(tmp_path: Path) -> None:
    rollouts = [Rollout(task_id="a", status="done", artifacts={"defects": "rollouts/a/deck_defects.json"})]
    (tmp_path / "rollouts" / "a").mkdir(parents=True)
    (tmp_path / "rollouts" / "a" / "deck_defects.json").write_text(
        json.dumps({"aspect": "16:9", "slides": [{"png": "p.png", "defects": []}]})
    )
    write_report(RunReader(tmp_path), rollouts, [], ())
    text = (tmp_path / "filters" / "failures.md").read_text()
    assert "1 accepted (100.0%)" in text and "No defects measured." in text and "## Rejected rollouts\n\nNone." in text
    assert all((tmp_path / "filters" / name).stat().st_size > 1000 for name in ("failures.png", "defects.png"))


def test_the_rejected_table_names_the_first_rows_and_counts_the_rest() -> None:
    rollouts = [Rollout(task_id=f"t{i:05d}", status="failed", failure="environment/timeout") for i in range(REJECTED_ROWS + 5)]
    text = markdown(tally(rollouts, [], GATES, lambda r: []))
    assert text.count("| environment | environment/timeout |") == REJECTED_ROWS
    assert f"The first {REJECTED_ROWS} of {REJECTED_ROWS + 5}; every verdict is in verdicts.parquet." in text
