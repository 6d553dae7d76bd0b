"""Which prompt templates and models made which share of a set of samples (`pipeline.provenance`, the dataset card).

A sample's origin is what its records name (core.records.Origin): its trajectory's (the agent's
prompts and model, its critic's), its task's (the writer and the quality gate) and its verdicts'
(the judges). A template changed during a run shows as two rows, one per content hash.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from core.records import Origin

NOT_RECORDED = "(not recorded: made before records named their origin)"


@dataclass(frozen=True)
class Row:
    name: str  # a template id, or "<role>: <model and sampling>"
    detail: str  # the template's content hash, or ""
    samples: int
    share: float


@dataclass(frozen=True)
class Breakdown:
    samples: int
    templates: tuple[Row, ...]
    models: tuple[Row, ...]

    def to_json(self) -> dict[str, Any]:
        def rows(found: tuple[Row, ...], key: str) -> list[dict[str, Any]]:
            return [
                {key: r.name, "hash": r.detail, "samples": r.samples, "share": round(r.share, 4)}
                if key == "template"
                else {key: r.name, "samples": r.samples, "share": round(r.share, 4)}
                for r in found
            ]

        return {"samples": self.samples, "templates": rows(self.templates, "template"), "models": rows(self.models, "model")}


def breakdown(origins: Sequence[Origin]) -> Breakdown:
    """Per template version and per role's model: how many of the samples (one origin each) it helped make."""
    templates: Counter[tuple[str, str]] = Counter()
    models: Counter[tuple[str, str]] = Counter()
    for origin in origins:
        templates.update(origin.templates.items() or [(NOT_RECORDED, "")])
        models.update([(f"{role}: {use.label}", "") for role, use in origin.models.items()] or [(NOT_RECORDED, "")])
    n = len(origins)

    def rows(counts: Counter[tuple[str, str]]) -> tuple[Row, ...]:
        return tuple(
            Row(name, detail, k, k / n) for (name, detail), k in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        )

    return Breakdown(n, rows(templates), rows(models))


def table(found: Breakdown) -> str:
    """The breakdown as Markdown tables."""
    lines = ["| prompt template | content hash | samples | share |", "|---|---|---:|---:|"]
    lines += [f"| `{r.name}` | `{r.detail}` | {r.samples} | {r.share:.1%} |" for r in found.templates]
    lines += ["", "| role: model (sampling) | samples | share |", "|---|---:|---:|"]
    lines += [f"| {r.name} | {r.samples} | {r.share:.1%} |" for r in found.models]
    return "\n".join(lines)
