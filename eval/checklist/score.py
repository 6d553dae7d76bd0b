"""A deck's checklist score, as PresentBench defines it: yes / no / not applicable per check, weighted per class.

Per class (core.records.CheckClass), score = weight x yes / (yes + no): "not applicable" counts in neither.
PresentBench's first release scored so; its current code counts "not applicable" as a no in the denominator.
A class with no yes or no has no score, and its weight leaves the denominator: the percent is the class scores
over the scored classes' weights (over `total` when given and every class is scored) x 100. The per-slide
fidelity checks past the deck's length are dropped (check i is about slide i), as PresentBench's
`generate_checklist` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from core.records import Check, CheckClass, Constraints

ANSWERS = ("yes", "no", "not_applicable")
WEIGHTS = {cls.value: 20.0 for cls in CheckClass}  # PresentBench's, in each of its domains


@dataclass(frozen=True)
class ClassScore:
    yes: int
    no: int
    not_applicable: int
    score: Optional[float]  # weight * yes / (yes + no); None when no check was answered yes or no


@dataclass(frozen=True)
class ChecklistScore:
    classes: dict[str, ClassScore]  # CheckClass value -> its counts and score
    percent: Optional[float]  # None when no class has a score


def kept_checks(checklist: Sequence[Check], slides: int) -> list[Check]:
    """The checks a deck of `slides` slides is judged on: every one but the fidelity checks past its last slide."""
    fidelity = [c for c in checklist if c.cls == CheckClass.fidelity]
    return [c for c in checklist if c.cls != CheckClass.fidelity] + fidelity[:slides]


def score_checklist(
    name: str,
    checklist: Sequence[Check],
    answers: Mapping[str, str],
    slides: int,
    weights: Mapping[str, float] = WEIGHTS,
    total: Optional[float] = None,
) -> ChecklistScore:
    """The score of the deck `name` (for errors) from `answers` (check_id -> one of ANSWERS) to its `checklist`."""
    if slides < 0:
        raise ValueError(f"{name}: a deck has 0 or more slides, got {slides}")
    if unknown := sorted(set(answers) - {c.check_id for c in checklist}):
        raise ValueError(f"{name}: answers for checks it does not have: {', '.join(unknown)}")
    kept = kept_checks(checklist, slides)
    classes = {
        cls.value: _class_score(name, [c for c in kept if c.cls == cls], answers, weights[cls.value]) for cls in CheckClass
    }
    scored = {cls: s.score for cls, s in classes.items() if s.score is not None}
    denominator = total if total is not None and len(scored) == len(classes) else sum(weights[cls] for cls in scored)
    return ChecklistScore(classes, sum(scored.values()) / denominator * 100 if denominator else None)


def _class_score(name: str, checks: list[Check], answers: Mapping[str, str], weight: float) -> ClassScore:
    counts = dict.fromkeys(ANSWERS, 0)
    for check in checks:
        if check.check_id not in answers:
            raise ValueError(f"{name}: no answer for check {check.check_id}")
        answer = answers[check.check_id]
        if answer not in counts:
            raise ValueError(f"{name}: check {check.check_id} answered {answer!r}, not one of {ANSWERS}")
        counts[answer] += 1
    yes, no = counts["yes"], counts["no"]
    return ClassScore(yes, no, counts["not_applicable"], weight * yes / (yes + no) if yes + no else None)


def rule_constraints(rule: str) -> Optional[Constraints]:
    """The constraint a check's rule states ("slides:MIN-MAX", "language:CODE", "aspect:W:H"); None for another rule."""
    kind, _, value = rule.partition(":")
    if kind == "slides":
        low, high = value.split("-")
        return Constraints(slides_min=int(low), slides_max=int(high))
    if kind == "language":
        return Constraints(language=value)
    if kind == "aspect":
        return Constraints(aspect_ratio=value)
    return None
