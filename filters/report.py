"""The filters' figures: failure distribution (the paper's Figure 5) and measured defect distribution.

Each rejected rollout counts once, under its first failing category in pipeline order
(environment, then the gates as configured; the content gate has a category per check),
as in Figure 5 (filters.acceptance decides); the per-gate table counts every failed verdict. Defects are the codes x severities of deck_defects.json over the
final decks of every finished rollout. Written to RUN_DIR/filters/: failures.md,
failures.png, defects.png.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from core.defects import SEVERITY_RANK
from core.records import ArtifactError, Rollout, RolloutStatus, Verdict
from core.run.reader import RunReader
from core.run.store import atomic_write_text
from filters.acceptance import ENVIRONMENT, UNDECIDED, Acceptance, category_order, outcomes
from filters.content import CODES as CONTENT_CODES
from filters.content import GATE as CONTENT_GATE

PAPER_SHARES = {"quality": 43.0, "environment": 32.3, "constraint": 13.5, "consistency": 11.2}  # Figure 5, % of failures
SEVERITIES = sorted(SEVERITY_RANK, key=SEVERITY_RANK.__getitem__, reverse=True)  # critical, major, minor
_SEVERITY_COLOURS = {"critical": "#c0392b", "major": "#e67e22", "minor": "#f1c40f"}
_REASON_CHARS = 200


def defect_counts(run: RunReader, rollouts: Sequence[Rollout]) -> Counter[tuple[str, str]]:
    """(code, severity) -> count over the deck_defects.json of finished rollouts (missing or unreadable ones are skipped:
    the quality gate gave those an environment verdict)."""
    counts: Counter[tuple[str, str]] = Counter()
    for rollout in rollouts:
        if rollout.status != RolloutStatus.done:
            continue
        try:
            deck = run.deck(rollout)
        except ArtifactError:
            continue
        counts.update((d.code, d.severity) for slide in deck.slides for d in slide.defects)
    return counts


def markdown(
    found: Sequence[Acceptance], verdicts: Sequence[Verdict], gates: Sequence[str], defects: Counter[tuple[str, str]]
) -> str:
    total = len(found)
    accepted = sum(o.accepted for o in found)
    rejected = [o for o in found if o.rejected]
    undecided = sum(o.category == UNDECIDED for o in found)
    lines = [
        f"# Filters: {total} rollouts, {accepted} accepted ({_pct(accepted, total)}), {len(rejected)} rejected, {undecided} undecided",
        "",
        f"Gates: {', '.join(gates) or 'none (every finished rollout is kept)'}.",
        "",
        "## Failure distribution (Figure 5: each rejected rollout under its first failing category)",
        "",
        "| category | rollouts | share of rejected | paper |",
        "|---|---:|---:|---:|",
    ]
    by_category = Counter(o.category for o in rejected if o.category)
    for category in _categories(gates, by_category):
        paper = f"{PAPER_SHARES[category]:.1f}%" if category in PAPER_SHARES else "-"
        lines.append(f"| {category} | {by_category[category]} | {_pct(by_category[category], len(rejected))} | {paper} |")
    lines += [
        "",
        "## Verdicts by gate (a rollout may fail several gates)",
        "",
        "| gate | verdicts | passed | failed | of which environment |",
        "|---|---:|---:|---:|---:|",
    ]
    for gate in [ENVIRONMENT, *gates]:
        mine = [v for v in verdicts if v.gate == gate]
        failed = [v for v in mine if not v.passed]
        lines.append(
            f"| {gate} | {len(mine)} | {len(mine) - len(failed)} | {len(failed)} | {sum(v.category == ENVIRONMENT for v in failed)} |"
        )
    if CONTENT_GATE in gates:
        lines += [
            "",
            "## Content checks (a deck may fail several; filters/content.py)",
            "",
            "| check | decks failing |",
            "|---|---:|",
        ]
        failing = Counter(
            r.split(":", 1)[0] for v in verdicts if v.gate == CONTENT_GATE and v.category != ENVIRONMENT for r in v.reasons
        )
        lines += [f"| {code} | {failing[code]} |" for code in CONTENT_CODES]
    lines += ["", "## Measured defects of the final decks (deck_defects.json)", ""]
    if defects:
        lines += [f"| code | {' | '.join(SEVERITIES)} | total |", "|---|" + "---:|" * (len(SEVERITIES) + 1)]
        for code in sorted({c for c, _ in defects}):
            row = [defects[(code, s)] for s in SEVERITIES]
            lines.append(f"| {code} | {' | '.join(map(str, row))} | {sum(row)} |")
    else:
        lines.append("No defects measured.")
    lines += ["", "## Rejected rollouts", ""]
    if rejected:
        lines += ["| task | category | first reason |", "|---|---|---|"]
        lines += [f"| {o.task_id} | {o.category} | {_cell(o.reasons[0] if o.reasons else '')} |" for o in rejected]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def failures_chart(found: Sequence[Acceptance], gates: Sequence[str], path: Path) -> None:
    rejected = Counter(o.category for o in found if o.rejected and o.category is not None)  # rejected: it has one
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


def write_report(
    run: RunReader, rollouts: Sequence[Rollout], verdicts: Sequence[Verdict], gates: Sequence[str]
) -> list[Acceptance]:
    """Write RUN_DIR/filters/{failures.md, failures.png, defects.png}; returns each rollout's outcome."""
    folder = run.path("filters")
    folder.mkdir(exist_ok=True)
    found = outcomes(rollouts, verdicts, gates)
    defects = defect_counts(run, rollouts)
    atomic_write_text(folder / "failures.md", markdown(found, verdicts, gates, defects))
    failures_chart(found, gates, folder / "failures.png")
    defects_chart(defects, folder / "defects.png")
    return found


def _categories(gates: Sequence[str], present: Counter[str]) -> list[str]:
    known = category_order(gates)
    return known + sorted(c for c in present if c not in known)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _cell(text: str) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= _REASON_CHARS else flat[: _REASON_CHARS - 3] + "..."
