"""One eval run's result, as `<run>/scores/summary.json`: what the tables and Figure 6 are made of."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core.run.store import atomic_write_text

SUMMARY = Path("scores") / "summary.json"
FULL = "full"
ABLATIONS = {  # (agents, reflection) -> Table 3's configuration
    ("dual", "grounded"): FULL,
    ("dual", "none"): "w/o Grounded Reflection",
    ("single", "grounded"): "w/o Dual-Agent",
    ("single", "none"): "w/o Dual-Agent, w/o Grounded Reflection",
}


@dataclass(frozen=True)
class RunSummary:
    framework: str
    model: str
    variant: str  # "full" or Table 3's "w/o ..." label
    run_dir: str
    tasks: int
    rendered: int
    render_rate: float
    unjudged: int
    constraint: float | None
    content: float | None
    style: float | None
    avg: float | None
    diversity: float | None  # normalised Vendi score, 0-1
    vendi: float | None  # raw Vendi score (effective number of distinct decks)
    cost_per_deck: float  # USD, the system's generation only
    tokens_per_deck: float
    policy: str  # model | scripted (the rule-based baseline policy)
    describer: str
    judge: str
    judge_scripted: bool
    judge_cost_usd: float | None  # the describer's and judge's calls (the ledger's eval_scores); None: a price unknown
    encoder: str | None
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)  # domain -> Metrics.to_dict()

    @property
    def label(self) -> str:
        return self.model if self.variant == FULL else f"{self.model} ({self.variant})"

    def write(self, root: Path) -> Path:
        path = root / SUMMARY
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(asdict(self), ensure_ascii=False, indent=1))
        return path

    @classmethod
    def read(cls, root: Path) -> RunSummary:
        path = root / SUMMARY
        data = json.loads(path.read_text(encoding="utf-8"))
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {sorted(unknown)}")
        return cls(**data)
