"""The filters' figures: failure distribution (the paper's Figure 5) and measured defect distribution.

Each rejected rollout counts once, under its first failing category in pipeline order
(environment, then the gates as configured; the content gate has a category per check),
as in Figure 5 (filters.acceptance decides); the per-gate table counts every failed verdict. Defects are the codes x severities of deck_defects.json over the
final decks of every finished rollout. Written to RUN_DIR/filters/: failures.md,
failures.png, defects.png.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from core.defects import SEVERITY_RANK
from core.records import ArtifactError, Rollout, RolloutStatus, Verdict
from core.run.reader import RunReader
from core.run.store import atomic_write_text
from filters.acceptance import ENVIRONMENT, UNDECIDED, Acceptance, Fates, category_order
from filters.content import CODES as CONTENT_CODES
from filters.content import GATE as CONTENT_GATE

PAPER_SHARES = {"quality": 43.0, "environment": 32.3, "constraint": 13.5, "consistency": 11.2}  # Figure 5, % of failures
SEVERITIES = sorted(SEVERITY_RANK, key=SEVERITY_RANK.__getitem__, reverse=True)  # critical, major, minor
_SEVERITY_COLOURS = {"critical": "#c0392b", "major": "#e67e22", "minor": "#f1c40f"}
_REASON_CHARS = 200


REJECTED_ROWS = 1000  # rejected rollouts listed by name in failures.md (all of them are in verdicts.parquet)


@dataclass
class Tally:
    """What the report counts, from one pass over the verdicts and one over the rollouts (nothing else kept)."""

    gates: Sequence[str]
    outcomes: Counter[str | None] = field(default_factory=Counter)  # rollouts by category (None: accepted)
    rejected: list[Acceptance] = field(default_factory=list)  # the first REJECTED_ROWS rejected, for the table
    verdicts: dict[str, Counter[str]] = field(default_factory=dict)  # gate -> passed, failed, environment
    content_failing: Counter[str] = field(default_factory=Counter)  # content check -> decks failing it
    defects: Counter[tuple[str, str]] = field(default_factory=Counter)  # (code, severity) over the final decks

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    @property
    def rejected_count(self) -> int:
        return sum(n for category, n in self.outcomes.items() if category not in (None, UNDECIDED))


DeckDefects = Callable[[Rollout], Iterable[tuple[str, str]]]  # a finished rollout's (code, severity) defects


@dataclass(frozen=True)
class VerdictCounts:
    """One pass over the verdicts: each task's fate and the counts the reports show."""

    fates: Fates
    by_gate: dict[str, Counter[str]]  # gate (environment, the run's, then any other) -> passed, failed, environment
    content_failing: Counter[str]  # content check -> decks failing it


def count_verdicts(verdicts: Iterable[Verdict], gates: Sequence[str]) -> VerdictCounts:
    counts = VerdictCounts(Fates(gates), {gate: Counter() for gate in [ENVIRONMENT, *gates]}, Counter())
    for v in verdicts:
        counts.fates.add(v)
        by_gate = counts.by_gate.setdefault(v.gate, Counter())
        by_gate["passed" if v.passed else "failed"] += 1
        by_gate[ENVIRONMENT] += not v.passed and v.category == ENVIRONMENT
        if v.gate == CONTENT_GATE and v.category != ENVIRONMENT:
            counts.content_failing.update(r.split(":", 1)[0] for r in v.reasons)
    return counts


def tally(rollouts: Iterable[Rollout], verdicts: Iterable[Verdict], gates: Sequence[str], defects: DeckDefects) -> Tally:
    """Count the verdicts, then each rollout's outcome and its final deck's defects, reading each once."""
    counts = count_verdicts(verdicts, gates)
    fates = counts.fates
    counted = Tally(gates, verdicts=counts.by_gate, content_failing=counts.content_failing)
    for rollout in rollouts:
        outcome = fates.of(rollout)
        counted.outcomes[outcome.category] += 1
        if outcome.rejected and len(counted.rejected) < REJECTED_ROWS:
            counted.rejected.append(outcome)
        if rollout.status == RolloutStatus.done:
            counted.defects.update(defects(rollout))
    return counted


def deck_defects(run: RunReader) -> DeckDefects:
    """The (code, severity) of each defect in a rollout's deck_defects.json (none when missing or unreadable: the
    quality gate gave that rollout an environment verdict)."""

    def read(rollout: Rollout) -> list[tuple[str, str]]:
        try:
            deck = run.deck(rollout)
        except ArtifactError:
            return []
        return [(d.code, d.severity) for slide in deck.slides for d in slide.defects]

    return read


def markdown(counted: Tally) -> str:
    gates, total, rejected = counted.gates, counted.total, counted.rejected_count
    accepted, undecided = counted.outcomes[None], counted.outcomes[UNDECIDED]
    lines = [
        f"# Filters: {total} rollouts, {accepted} accepted ({_pct(accepted, total)}), {rejected} rejected, {undecided} undecided",
        "",
        f"Gates: {', '.join(gates) or 'none (every finished rollout is kept)'}.",
        "",
        "## Failure distribution (Figure 5: each rejected rollout under its first failing category)",
        "",
        "| category | rollouts | share of rejected | paper |",
        "|---|---:|---:|---:|",
    ]
    by_category = _rejected_by_category(counted)
    for category in _categories(gates, by_category):
        paper = f"{PAPER_SHARES[category]:.1f}%" if category in PAPER_SHARES else "-"
        lines.append(f"| {category} | {by_category[category]} | {_pct(by_category[category], rejected)} | {paper} |")
    lines += [
        "",
        "## Verdicts by gate (a rollout may fail several gates)",
        "",
        "| gate | verdicts | passed | failed | of which environment |",
        "|---|---:|---:|---:|---:|",
    ]
    for gate in [ENVIRONMENT, *gates]:
        mine = counted.verdicts.get(gate, Counter())
        lines.append(
            f"| {gate} | {mine['passed'] + mine['failed']} | {mine['passed']} | {mine['failed']} | {mine[ENVIRONMENT]} |"
        )
    if CONTENT_GATE in gates:
        lines += [
            "",
            "## Content checks (a deck may fail several; filters/content.py)",
            "",
            "| check | decks failing |",
            "|---|---:|",
        ]
        lines += [f"| {code} | {counted.content_failing[code]} |" for code in CONTENT_CODES]
    defects = counted.defects
    lines += ["", "## Measured defects of the final decks (deck_defects.json)", ""]
    if defects:
        lines += [f"| code | {' | '.join(SEVERITIES)} | total |", "|---|" + "---:|" * (len(SEVERITIES) + 1)]
        for code in sorted({c for c, _ in defects}):
            row = [defects[(code, s)] for s in SEVERITIES]
            lines.append(f"| {code} | {' | '.join(map(str, row))} | {sum(row)} |")
    else:
        lines.append("No defects measured.")
    lines += ["", "## Rejected rollouts", ""]
    if counted.rejected:
        lines += ["| task | category | first reason |", "|---|---|---|"]
        lines += [f"| {o.task_id} | {o.category} | {_cell(o.reasons[0] if o.reasons else '')} |" for o in counted.rejected]
        if rejected > len(counted.rejected):
            lines += ["", f"The first {len(counted.rejected)} of {rejected}; every verdict is in verdicts.parquet."]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _rejected_by_category(counted: Tally) -> Counter[str]:
    return Counter({c: n for c, n in counted.outcomes.items() if c is not None and c != UNDECIDED})


def failures_chart(counted: Tally, path: Path) -> None:
    gates, rejected = counted.gates, _rejected_by_category(counted)
    categories = _categories(gates, rejected)
    total = sum(rejected.values())
    ours = [100 * rejected[c] / total if total else 0.0 for c in categories]
    paper = [PAPER_SHARES.get(c, 0.0) for c in categories]
    fig = Figure(figsize=(max(7, 0.8 * len(categories)), 4), layout="constrained")
    ax = fig.add_subplot()
    xs = range(len(categories))
    ax.bar([x - 0.2 for x in xs], ours, width=0.4, label=f"this run ({total} rejected)", color="#2c7fb8")
    ax.bar([x + 0.2 for x in xs], paper, width=0.4, label="paper (Figure 5)", color="#bdbdbd", hatch="//")
    for x, share in zip(xs, ours):
        ax.annotate(f"{share:.1f}%", (x - 0.2, share), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs), categories, rotation=30, ha="right")
    ax.set_ylabel("share of rejected rollouts (%)")
    ax.set_title("Failure distribution before filtering")
    ax.legend()
    fig.savefig(path, dpi=120)


def defects_chart(defects: Counter[tuple[str, str]], path: Path) -> None:
    codes = sorted({c for c, _ in defects}, key=lambda c: -sum(defects[(c, s)] for s in SEVERITIES))
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    bottom = [0] * len(codes)
    for severity in SEVERITIES:
        heights = [defects[(c, severity)] for c in codes]
        ax.bar(codes, heights, bottom=bottom, label=severity, color=_SEVERITY_COLOURS[severity])
        bottom = [b + h for b, h in zip(bottom, heights)]
    if not codes:
        ax.text(0.5, 0.5, "no defects measured", ha="center", va="center", transform=ax.transAxes)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("defects in final decks")
    ax.set_title("Measured defects by code and severity")
    ax.tick_params(axis="x", labelrotation=30)
    ax.legend()
    fig.savefig(path, dpi=120)


def write_report(run: RunReader, rollouts: Iterable[Rollout], verdicts: Iterable[Verdict], gates: Sequence[str]) -> Tally:
    """Write RUN_DIR/filters/{failures.md, failures.png, defects.png} (rollouts and verdicts read once, as they come);
    returns what it counted."""
    folder = run.path("filters")
    folder.mkdir(exist_ok=True)
    counted = tally(rollouts, verdicts, gates, deck_defects(run))
    atomic_write_text(folder / "failures.md", markdown(counted))
    failures_chart(counted, folder / "failures.png")
    defects_chart(counted.defects, folder / "defects.png")
    return counted


def _categories(gates: Sequence[str], present: Counter[str]) -> list[str]:
    known = category_order(gates)
    return known + sorted(c for c in present if c not in known)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _cell(text: str) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= _REASON_CHARS else flat[: _REASON_CHARS - 3] + "..."
