"""The dataset card (README.md) of an export: counts, token lengths, what it cost, which prompts and models made it,
sources, licences, the pipeline config."""

from __future__ import annotations

import statistics
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.prompts import render
from core.run.provenance import breakdown, table
from core.run.reader import RunReader
from core.run.usage import RoleUsage
from train.throughput import PAPER_EPOCHS, PAPER_GPUS, TOKENS_PER_S_PER_GPU, TOKENS_PER_S_SOURCE

if TYPE_CHECKING:
    from train.export import Exported, ExportReport

TEMPLATES = Path(__file__).parent / "templates"
MAX_SKIPPED_LINES = 30
BAR_WIDTH = 30


def histogram(lengths: list[int], max_length: int) -> list[dict[str, Any]]:
    """Counts per doubling bucket (1K, 2K, ... up to max_length)."""
    edges = [0]
    while edges[-1] * 2 < max_length:
        edges.append(max(1024, edges[-1] * 2))
    edges.append(max_length)
    counts = [sum(1 for n in lengths if lo < n <= hi) for lo, hi in pairwise(edges)]
    top = max(counts, default=0) or 1
    return [
        {"label": f"{lo + 1:,}-{hi:,}", "count": c, "bar": "█" * round(BAR_WIDTH * c / top)}
        for (lo, hi), c in zip(pairwise(edges), counts, strict=True)
    ]


def _split(name: str, items: list[Exported]) -> dict[str, Any]:
    return {
        "file": name,
        "samples": len(items),
        "tasks": len({e.sample.task_id for e in items}),
        "images": sum(len(e.sample.images) for e in items),
    }


def _sources(report: ExportReport) -> list[dict[str, Any]]:
    tasks: dict[str, set[str]] = {}
    licences: dict[str, Counter] = {}
    for task_id in {e.sample.task_id for e in report.samples}:
        task = report.tasks.get(task_id)
        source = task.source if task else "unknown (task record missing)"
        tasks.setdefault(source, set()).add(task_id)
        licence = task.licence if task else None
        licences.setdefault(source, Counter())[licence or "not recorded"] += 1
    return [
        {"source": s, "tasks": len(ids), "licences": ", ".join(f"{k} ({n})" for k, n in licences[s].most_common())}
        for s, ids in sorted(tasks.items())
    ]


def _listing(counter: Counter) -> str:
    return ", ".join(f"{k} {n}" for k, n in counter.most_common()) or "none"


def training_estimate(report: ExportReport) -> dict[str, Any]:
    """GPU-hours of the paper's setting (full SFT, 5 epochs) on this export's train split at the assumed throughput."""
    tokens = sum(e.tokens.total for e in report.train) * PAPER_EPOCHS
    hours = tokens / TOKENS_PER_S_PER_GPU / 3600
    return {
        "epochs": PAPER_EPOCHS,
        "tokens": f"{tokens:,}",
        "rate": f"{TOKENS_PER_S_PER_GPU:,.0f}",
        "source": TOKENS_PER_S_SOURCE,
        "gpu_hours": f"{hours:,.1f}",
        "gpus": PAPER_GPUS,
        "wall_hours": f"{hours / PAPER_GPUS:,.1f}",
    }


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def spending(report: ExportReport, run: RunReader) -> dict[str, Any]:
    """What the run spent (its ledger: every stage's model calls), per accepted rollout and per million exported tokens."""
    ledger = run.ledger()
    total: RoleUsage = ledger.total()
    tokens = sum(e.tokens.total for e in report.samples)
    rows = [
        {"stage": stage, "role": role, "calls": f"{u.calls:,}", "tokens": f"{u.tokens:,}", "cost": _usd(u.cost)}
        for stage, usage in ledger.stages.items()
        for role, u in sorted(usage.items())
    ]
    rows += [
        {
            "stage": f"{stage} (attempts that left no unit)",
            "role": role,
            "calls": f"{u.calls:,}",
            "tokens": f"{u.tokens:,}",
            "cost": _usd(u.cost),
        }
        for stage, usage in ledger.unfinished.items()
        for role, u in sorted(usage.items())
    ]
    cost = total.cost
    return {
        "total": _usd(cost),
        "calls": f"{total.calls:,}",
        "tokens": f"{total.tokens:,}",
        "unpriced": total.unpriced_calls,
        "rows": rows,
        "per_accepted": _usd(cost / report.accepted)
        if cost is not None and report.accepted
        else ("unknown" if report.accepted else "n/a"),
        "per_mtok": _usd(cost * 1e6 / tokens) if cost is not None and tokens else ("unknown" if tokens else "n/a"),
    }


def render_card(report: ExportReport, run: RunReader) -> str:
    samples = report.samples
    lengths = [e.tokens.total for e in samples]
    tokens = sum(lengths)
    trained = sum(e.tokens.trained for e in samples)
    languages = sorted({report.tasks[e.sample.task_id].language for e in samples if e.sample.task_id in report.tasks})
    skipped = [f"{s.task_id}/{s.agent}: {s.reason}" for s in report.skipped]
    if len(skipped) > MAX_SKIPPED_LINES:
        skipped = skipped[:MAX_SKIPPED_LINES] + [f"... and {len(skipped) - MAX_SKIPPED_LINES} more"]
    return render(
        TEMPLATES,
        "dataset_card.md.j2",
        run_name=run.root.name,
        languages=languages or ["en"],
        splits=[_split("train.jsonl", report.train), _split("val.jsonl", report.val)],
        rollouts=report.rollouts,
        accepted=report.accepted,
        acceptance=report.acceptance,
        rejected=_listing(report.rejected) if report.rejected else "",
        agents=_listing(Counter(e.sample.agent for e in samples)),
        critic_calls=sum(e.sample.critic_calls for e in samples),
        mask_critic=report.mask_critic,
        policies=_listing(Counter(e.sample.policy for e in samples)),
        scripted=sum(1 for e in samples if e.sample.policy == "scripted"),
        max_length=f"{report.max_length:,}",
        truncated=sum(e.truncated for e in samples),
        dropped_long=sum(1 for s in report.skipped if s.kind == "too_long"),
        skipped=skipped,
        token_method=report.token_method,
        tokens=tokens,
        trained=trained,
        image_tokens=sum(e.tokens.image_tokens for e in samples),
        trained_share=f"{trained / tokens:.1%}" if tokens else "n/a",
        mean=round(statistics.mean(lengths)) if lengths else 0,
        median=round(statistics.median(lengths)) if lengths else 0,
        longest=max(lengths, default=0),
        histogram=histogram(lengths, report.max_length),
        sources=_sources(report),
        training=training_estimate(report),
        cost=spending(report, run),
        provenance=table(breakdown([report.origin(e) for e in samples])) if samples else "",
        config_hash=run.config_hash() or "unknown",
        config_yaml=run.config_text().strip() or "# no config.yaml in the run directory",
    )
