"""The run's figures, computed once: the static report and the wandb dashboard both show these.

`compute_figures` turns a loaded run into `Figures` (funnel, yield, tokens and cost,
throughput, failure, outcome and defect distributions, task mix, one row per rollout);
`metrics` flattens them into the scalar names logged to wandb. Cost is the ledger's
(core.run.ledger: every stage's model calls), as in stats/usage.json.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from core.records import Rollout, RolloutStatus, Task
from core.seams.deck import DeckSlide
from filters.acceptance import Fates
from filters.report import count_verdicts
from pipeline.augment import slide_bucket
from pipeline.config import ConstraintMix
from pipeline.report.data import RolloutRead, RunData, read_rollouts
from pipeline.spending import spending

ACCEPTED = "accepted"
NOT_FILTERED = "not filtered"


@dataclass(frozen=True)
class FunnelStep:
    label: str
    count: int | None  # None: the stage has not run
    note: str


@dataclass(frozen=True)
class RoleTotals:
    role: str
    prompt_tokens: int
    completion_tokens: int

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


TABLE_FIELDS = (  # the task table's columns (RolloutRow attributes): the site's rows.js and the dashboard's table
    "task_id",
    "source",
    "language",
    "aspect",
    "slides_asked",
    "status",
    "category",
    "slides",
    "defects",
    "injections",
    "steps",
    "tokens",
    "cost_usd",
    "wall_s",
)


@dataclass(frozen=True)
class RolloutRow:
    task_id: str
    source: str
    language: str
    aspect: str
    slides_asked: str
    status: str  # done | failed
    failure: str  # "" when done
    outcome: str  # accepted | <rejection category> | undecided | not filtered
    steps: int
    injections: int
    tokens: int
    cost_usd: float
    wall_s: float
    slides: int  # slides in the final deck
    defects: int  # measured defects in the final deck
    policy: str

    @property
    def category(self) -> str:
        """What the task table filters on: the filter outcome, else a failed rollout's failure category."""
        if self.outcome == NOT_FILTERED and self.status != RolloutStatus.done:
            return self.failure.split("/")[0] or "unknown"
        return self.outcome


@dataclass(frozen=True)
class MixRow:
    label: str
    train: int
    eval: int

    @property
    def total(self) -> int:
        return self.train + self.eval


@dataclass(frozen=True)
class MixTable:
    title: str
    rows: tuple[MixRow, ...]


@dataclass(frozen=True)
class Figures:
    funnel: tuple[FunnelStep, ...]
    rows: tuple[RolloutRow, ...]
    usage: tuple[RoleTotals, ...]  # rollout tokens by role (agents, critic; the scripted policy's estimates included)
    cost_usd: float | None  # every stage's model calls (the ledger); None: a price is unknown
    spending: dict[str, Any]  # stats/usage.json as it stands: the ledger by stage and role, per accepted, per SFT token
    projection: dict[str, Any] | None  # the rollouts stage's projected cost, when it was made
    accepted: int | None  # None: the filters have not run
    headline: dict[str, float | None]  # yield, tokens and cost per accepted trajectory, throughput
    failures: Counter[str]  # failed rollouts by failure kind
    outcomes: Counter[str] | None  # rollouts by filter outcome; None: not filtered
    gates: dict[str, Counter[str]]  # gate -> passed, failed, and environment (failed ones of that category)
    defects: Counter[tuple[str, str]]  # (code, severity) over the final decks
    findings: Counter[str]  # critic findings by category (injected or not)
    task_mix: tuple[MixTable, ...]
    tasks: int  # tasks of every split
    stages: dict[str, dict]  # each stage's own figures (see data.RunData.stages)


def compute_figures(run: RunData, each: Callable[[RolloutRead, RolloutRow], None] | None = None) -> Figures:
    """The run's figures from one pass over its verdicts, one over its rollouts (`each` is shown every rollout with
    its row as the pass reads it: the site writes its page then) and one over its tasks."""
    fates, gates = _verdict_figures(run)
    rows: list[RolloutRow] = []
    prompt: Counter[str] = Counter()
    completion: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    findings: Counter[str] = Counter()
    defects: Counter[tuple[str, str]] = Counter()
    for seen in read_rollouts(run):
        rollout = seen.rollout
        final = seen.slides if rollout.status == RolloutStatus.done else []  # final decks only
        outcome = NOT_FILTERED if fates is None else fates.of(rollout).category or ACCEPTED
        row = _row(rollout, seen.task, outcome, final)
        rows.append(row)
        for role, used in rollout.tokens_by_role().items():
            prompt[role] += used.prompt_tokens
            completion[role] += used.completion_tokens
        if rollout.status != RolloutStatus.done:
            failures[rollout.failure or "unknown"] += 1
        findings.update(rollout.findings)
        defects.update((d.code, d.severity) for s in final for d in s.defects)
        if each is not None:
            each(seen, row)
    usage = tuple(RoleTotals(role, prompt[role], completion[role]) for role in sorted(set(prompt) | set(completion)))
    accepted = None if fates is None else sum(row.outcome == ACCEPTED for row in rows)
    spent = spending(run.ledger, accepted, run.sft_tokens)
    cost = spent["total"]["cost_usd"]
    mix, splits = _task_mix(run)
    return Figures(
        funnel=_funnel(run, rows, accepted, splits),
        rows=tuple(rows),
        usage=usage,
        cost_usd=cost,
        spending=spent,
        projection=run.projection,
        accepted=accepted,
        headline=_headline(run, rows, sum(u.total for u in usage), cost, accepted),
        failures=failures,
        outcomes=None if fates is None else Counter(row.outcome for row in rows),
        gates=gates,
        defects=defects,
        findings=findings,
        task_mix=mix,
        tasks=sum(splits.values()),
        stages=run.stages,
    )


def _verdict_figures(run: RunData) -> tuple[Fates | None, dict[str, Counter[str]]]:
    """Each task's fate and the verdicts passed and failed per gate (environment first), from one pass over the
    verdicts; (None, {}) when the filters have not run."""
    if not run.filtered:
        return None, {}
    counts = count_verdicts(run.reader.iter_verdicts(), run.gates)
    return counts.fates, counts.by_gate


def _row(rollout: Rollout, task: Task | None, outcome: str, deck: list[DeckSlide]) -> RolloutRow:
    constraints = task.constraints if task else None
    return RolloutRow(
        task_id=rollout.task_id,
        source=task.source if task else "?",
        language=task.language if task else "?",
        aspect=(constraints.aspect_ratio if constraints else None) or "free",
        slides_asked=_slides_label(constraints.slides_min, constraints.slides_max) if constraints else "free",
        status=rollout.status,
        failure=rollout.failure or "",
        outcome=outcome,
        steps=sum(rollout.steps.values()),
        injections=rollout.injections,
        tokens=rollout.tokens,
        cost_usd=rollout.cost_usd,
        wall_s=rollout.wall_s,
        slides=len(deck),
        defects=sum(len(s.defects) for s in deck),
        policy=rollout.policy,
    )


def _slides_label(low: int | None, high: int | None) -> str:
    if low is None:
        return "free"
    return str(low) if high in (None, low) else f"{low}-{high}"


def _funnel(
    run: RunData, rows: Sequence[RolloutRow], accepted: int | None, splits: Counter[str | None]
) -> tuple[FunnelStep, ...]:
    split = (run.config.get("rollouts") or {}).get("split", "train")
    others = sum(splits.values()) - splits[split]
    done = sum(row.status == RolloutStatus.done for row in rows)
    samples = run.sft_samples
    return (
        FunnelStep(
            f"tasks ({split})",
            splits[split] if splits else None,
            f"{others} more in other splits" if splits else "no tasks/*.parquet",
        ),
        FunnelStep("rollouts", len(rows), f"{done} finished, {len(rows) - done} failed"),
        FunnelStep(
            ACCEPTED, accepted, f"gates: {', '.join(run.gates) or 'none'}" if accepted is not None else "the filters have not run"
        ),
        FunnelStep(
            "SFT samples",
            sum(samples.values()) if samples is not None else None,
            ", ".join(f"{k} {v}" for k, v in samples.items()) + _parity_note(run.stages.get("export", {}).get("parity"))
            if samples is not None
            else "the export has not run",
        ),
    )


def _parity_note(parity: dict[str, Any] | None) -> str:
    """How many trained turns showed the model what its teacher was shown (train.parity), as the export found."""
    if not parity:
        return " (parity not checked)"
    named = sum(parity.get("turns_named_difference", {}).values())
    return (
        f"; parity: {parity['turns_equal']} of {parity['turns_checked']} trained turns equal to the teacher's request"
        + (f", {named} by a named difference" if named else "")
        + (f", {parity['turns_different']} different" if parity.get("turns_different") else "")
    )


def _ratio(numerator: float, denominator: float | None) -> float | None:
    return numerator / denominator if denominator else None


def _headline(
    run: RunData, rows: Sequence[RolloutRow], tokens: int, cost: float | None, accepted: int | None
) -> dict[str, float | None]:
    walls = sorted(row.wall_s for row in rows if row.wall_s > 0)
    return {
        "yield": _ratio(accepted, len(rows)) if accepted is not None else None,
        "tokens_per_rollout": _ratio(tokens, len(rows)),
        "tokens_per_accepted": _ratio(tokens, accepted),
        "cost_usd": cost,
        "cost_per_accepted_usd": _ratio(cost, accepted) if cost is not None else None,
        "rollouts_per_hour": (run.stages.get("rollouts") or {}).get("rollouts_per_hour"),
        "rollouts_per_hour_per_slot": _ratio(3600 * len(walls), sum(walls)),
        "wall_s_median": statistics.median(walls) if walls else None,
        "wall_s_p95": walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))] if walls else None,
        "injections_per_rollout": _ratio(sum(row.injections for row in rows), len(rows)),
    }


def _task_mix(run: RunData) -> tuple[tuple[MixTable, ...], Counter[str | None]]:
    """The task mix tables and the tasks per split, from one pass over the tasks."""
    buckets = ((run.config.get("tasks") or {}).get("constraints") or {}).get("slides") or ConstraintMix().slides
    keys = {
        "language": lambda t: t.language,
        "source": lambda t: t.source,
        "aspect ratio": lambda t: t.constraints.aspect_ratio or "free",
        "slide count": lambda t: slide_bucket(t.constraints, buckets),
    }
    counts: dict[str, Counter[tuple[str, str | None]]] = {title: Counter() for title in keys}
    splits: Counter[str | None] = Counter()
    for task in run.reader.iter_tasks():
        splits[task.split] += 1
        for title, key in keys.items():
            counts[title][(key(task), task.split)] += 1
    tables = []
    for title in keys:
        labels = sorted({label for label, _ in counts[title]})
        tables.append(
            MixTable(
                title, tuple(MixRow(label, counts[title][(label, "train")], counts[title][(label, "eval")]) for label in labels)
            )
        )
    return tuple(tables), splits


def metrics(figures: Figures) -> dict[str, float]:
    """The figures as flat scalars: what the wandb summary holds (figures not known yet are left out)."""
    found: dict[str, float | None] = {f"funnel/{s.label.split(' ')[0].lower()}": s.count for s in figures.funnel}
    found |= {f"report/{k}": v for k, v in figures.headline.items()}
    for u in figures.usage:
        found |= {f"tokens/{u.role}/prompt": u.prompt_tokens, f"tokens/{u.role}/completion": u.completion_tokens}
    for stage, spent in figures.spending["stages"].items():
        for role, u in spent["roles"].items():
            found |= {f"usage/{stage}/{role}/{k}": u[k] for k in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")}
    found |= {f"failures/{k}": v for k, v in figures.failures.items()}
    found |= {f"outcomes/{k}": v for k, v in (figures.outcomes or {}).items()}
    found |= {f"defects/{code}/{severity}": n for (code, severity), n in figures.defects.items()}
    found |= {f"findings/{k}": v for k, v in figures.findings.items()}
    return {k: v for k, v in found.items() if v is not None}
