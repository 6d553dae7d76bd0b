"""Per-deck scores and their aggregates (the paper's Constraint, Content, Style, Avg).

Constraint = the rule gate's fraction of constraints met x 5 (0-5); Content and Style =
the judge's slide means (1-5); Avg = their mean. A deck that did not render scores the
bottom of every scale (Constraint 0, Content 1, Style 1). A deck the judge could not
score (malformed replies after the re-asks) has no Content/Style and is left out of
those means, and counted. The deck's language is always checked: the task's explicit
language constraint, else the language the task was written in (the paper's tasks all
carry one).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from statistics import mean
from typing import Any, Sequence

from core.records import Task
from filters.config import FiltersConfig
from filters.constraints import check_deck

SCALE = 5.0
FLOOR = {"constraint": 0.0, "content": 1.0, "style": 1.0}  # what a deck that did not render scores
DOMAINS = {"persona": "PersonaHub", "arxiv": "arXiv", "finepdfs": "FinePDFs"}


@dataclass(frozen=True)
class DeckScore:
    task_id: str
    source: str
    language: str
    rendered: bool
    slides: int
    constraint: float  # 0-5
    content: float | None  # 1-5; None: the judge could not score it
    style: float | None
    cost_usd: float  # the system's generation cost (judge cost excluded)
    tokens: int
    failure: str | None = None  # why it did not render, or why it is unjudged
    constraint_failures: str = ""  # "slide count: expected 8, got 6; ..."
    content_failures: str = ""  # the content gate's failing checks by slide: "slide 3: duplicate_slides; ..."

    @property
    def avg(self) -> float | None:
        if self.content is None or self.style is None:
            return None
        return (self.constraint + self.content + self.style) / 3

    def row(self) -> dict[str, Any]:
        return asdict(self) | {"avg": self.avg}

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)] + ["avg"]


def checked_constraints(task: Task) -> Task:
    """The task with its language always constrained (explicit, else the task's own language)."""
    return replace(task, constraints=replace(task.constraints, language=task.constraints.language or task.language))


def constraint_score(pdf: Path, task: Task) -> tuple[float, str]:
    """(0-5 score, the failed checks) of a rendered deck; raises filters' UnusablePDF when unreadable."""
    report = check_deck(pdf, checked_constraints(task).constraints, FiltersConfig())
    return report.score * SCALE, "; ".join(report.reasons())


def unrendered(task: Task, failure: str, cost_usd: float, tokens: int) -> DeckScore:
    return DeckScore(
        task.task_id,
        task.source,
        task.language,
        False,
        0,
        FLOOR["constraint"],
        FLOOR["content"],
        FLOOR["style"],
        cost_usd,
        tokens,
        failure,
    )


@dataclass(frozen=True)
class Metrics:
    tasks: int
    rendered: int
    unjudged: int
    constraint: float | None
    content: float | None
    style: float | None
    cost_per_deck: float
    tokens_per_deck: float

    @property
    def render_rate(self) -> float:
        return self.rendered / self.tasks if self.tasks else 0.0

    @property
    def avg(self) -> float | None:
        constraint, content, style = self.constraint, self.content, self.style
        return None if constraint is None or content is None or style is None else (constraint + content + style) / 3

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"render_rate": self.render_rate, "avg": self.avg}


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return mean(known) if known else None


def aggregate(scores: Sequence[DeckScore]) -> Metrics:
    return Metrics(
        tasks=len(scores),
        rendered=sum(s.rendered for s in scores),
        unjudged=sum(s.content is None for s in scores),
        constraint=_mean([s.constraint for s in scores]),
        content=_mean([s.content for s in scores]),
        style=_mean([s.style for s in scores]),
        cost_per_deck=mean(s.cost_usd for s in scores) if scores else 0.0,
        tokens_per_deck=mean(s.tokens for s in scores) if scores else 0.0,
    )


def by_domain(scores: Sequence[DeckScore]) -> dict[str, Metrics]:
    """Metrics per task source (PersonaHub, arXiv, FinePDFs; other sources by their own name)."""
    groups: dict[str, list[DeckScore]] = defaultdict(list)
    for s in scores:
        groups[DOMAINS.get(s.source, s.source)].append(s)
    order = [*DOMAINS.values()]
    return {d: aggregate(groups[d]) for d in sorted(groups, key=lambda d: (order.index(d) if d in order else len(order), d))}
