"""The rule-written checklist of a task (pipeline/checklists.py): what the task demands, and its source's sections."""

from __future__ import annotations

from pathlib import Path

from core.records import CheckClass, Constraints, Task
from pipeline.checklists import rule_checklist

SOURCE = """# Tides

## Abstract

Why the sea rises twice a day.

## The moon's pull

The moon pulls the oceans toward it.

## Spring and neap tides

When the sun and moon line up, tides are higher.

## References

[1] A textbook.
"""


def test_the_checklist_follows_from_the_task_s_constraints_and_its_source_s_sections(tmp_path: Path) -> None:
    source = tmp_path / "tides.md"
    source.write_text(SOURCE, encoding="utf-8")
    task = Task(
        "t1", "arxiv", "Make a deck on tides.", "zh", attachments=(str(source),), constraints=Constraints(6, 9, "4:3", "zh")
    )
    checks = {c.check_id: c for c in rule_checklist(task)}
    assert (
        checks["fundamentals-slides"].rule == "slides:6-9" and "between 6 and 9 slides" in checks["fundamentals-slides"].question
    )
    assert checks["fundamentals-language"].rule == "language:zh" and "Chinese" in checks["fundamentals-language"].question
    assert checks["fundamentals-aspect"].rule == "aspect:4:3"
    covered = [c.rule for c in checks.values() if c.cls == CheckClass.completeness]
    assert covered == ["mentions:The moon's pull", "mentions:Spring and neap tides"]  # not its abstract nor references
    assert {c.cls for c in checks.values()} == {"fundamentals", "visual_design", "completeness", "correctness"}
    assert all(not c.rule for c in checks.values() if c.cls in ("visual_design", "correctness"))  # a judge model's


def test_a_task_without_constraints_or_source_still_gets_the_checks_every_deck_gets() -> None:
    checks = rule_checklist(Task("t2", "persona", "Make a deck.", "en"))
    assert [c.check_id for c in checks] == [
        "fundamentals-title",
        "visual_design-overflow",
        "visual_design-readable",
        "visual_design-consistent",
        "correctness-facts",
    ]
