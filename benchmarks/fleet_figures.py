"""What benchmarks.fleet plays and how it reports it: the modes, the synthetic rollouts, the figures of a repeat,
their medians, and the spread of units over the replicas."""

from __future__ import annotations

import math
import random
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from benchmarks.endpoint import percentile
from core.config import AdmissionMode, LLMConfig, Routing
from core.records import Message

SYSTEM = (
    "You are the Presenter. You design one HTML slide at a time, look at each rendered slide, and fix what you see. "
    "Tools: write_file(path, content), inspect_slide(path), finalize(outcome). Keep titles short, one idea per slide, "
    "at most five bullets, no paragraph longer than three lines, figures with captions, and a consistent palette. "
)
TOOL_RESULT = (
    "inspect_slide slides/slide_{n:02d}.html: rendered 1280x720. Title 'Tides and the moon' at 44px, two bullets at "
    "24px, one figure (figures/tide_{n}.png, 640x360) with its caption. Layout: no overflow, no overlap, margins 48px. "
    "Contrast ratio 7.1. The slide reads in about twelve seconds. Next: slide {m:02d} of the manuscript's outline."
)


@dataclass(frozen=True)
class Mode:
    """How a mode routes and admits: `per_process` is the limit before fleets (PerProcess429)."""

    routing: Routing = Routing.sticky
    load_bound: float = LLMConfig.routing_load_bound
    admission: AdmissionMode = AdmissionMode.refusals
    per_process: bool = False


MODES = {
    "local": {"sticky": Mode(), "round_robin": Mode(Routing.round_robin), "sticky_unbounded": Mode(load_bound=0.0)},
    "sim": {
        "per_process_429": Mode(Routing.round_robin, per_process=True),
        "shared": Mode(),
        "shared_metrics": Mode(admission=AdmissionMode.metrics),
        "shared_round_robin": Mode(Routing.round_robin),
        "shared_unbounded": Mode(load_bound=0.0),
    },
}
DEFAULT_MODES = {"local": "sticky,round_robin", "sim": "per_process_429,shared,shared_metrics,shared_round_robin"}


def conversation(nonce: str, rollout: int) -> list[Message]:
    return [Message("system", f"Session {nonce}. " + SYSTEM * 6), Message("user", f"Deck {rollout}: make 6 slides on tides.")]


def grow(messages: list[Message], reply: str, turn: int) -> None:
    messages += [Message("assistant", reply or "(no text)"), Message("user", TOOL_RESULT.format(n=turn + 1, m=turn + 2))]


def quantile(values: list[float], q: float) -> Optional[float]:
    """benchmarks.endpoint.percentile, None where nothing was measured."""
    return percentile(values, q) if values else None


@dataclass
class Figures:
    """One mode's figures, as `--json` prints them (None: a figure the mode cannot have)."""

    capacity_share: Optional[float] = None
    refused_share: Optional[float] = None
    cached_prompt_share: Optional[float] = None
    ttft_p50_s: Optional[float] = None
    turn_p50_s: Optional[float] = None
    turn_p95_s: Optional[float] = None
    rollouts_per_h: Optional[float] = None
    units_max_mean: Optional[float] = None  # sticky: the most units on one replica over the mean
    moved_share: Optional[float] = None  # sticky: units moved past the load bound, as a share of all
    extra: dict[str, Any] = field(default_factory=dict)  # printed, not in the contract

    def to_json(self) -> dict[str, Optional[float]]:
        return {k: (None if v is None else round(v, 4)) for k, v in self.__dict__.items() if k != "extra"}


def repeat(modes: list[str], rounds: int, play: Callable[[str], Figures]) -> dict[str, list[Figures]]:
    """Each mode `rounds` times, the modes in turn (A B A B ...): every repeat's figures, by mode."""
    repeats: dict[str, list[Figures]] = {mode: [] for mode in modes}
    for round_ in range(rounds):
        for mode in modes:
            figures = play(mode)
            print(f"  {mode} #{round_ + 1}: {line(figures)}", file=sys.stderr, flush=True)  # progress; stdout is the result
            repeats[mode].append(figures)
    return repeats


def median_of(results: list[Figures]) -> Figures:
    """The repeats of one mode: each figure's median over them."""
    median = Figures()
    for name in Figures().to_json():
        values = [getattr(r, name) for r in results if getattr(r, name) is not None]
        setattr(median, name, statistics.median(values) if values else None)
    median.extra = {
        k: statistics.median(r.extra[k] for r in results) for k, v in results[0].extra.items() if isinstance(v, (int, float))
    }
    return median


def spread(snapshot: dict[str, dict[str, Any]]) -> tuple[Optional[float], Optional[float]]:
    """Units per replica, the most over the mean, and the share moved past the load bound (None: not sticky)."""
    units = [int(state["units"]) for state in snapshot.values()]
    if not sum(units):
        return None, None
    return max(units) / statistics.fmean(units), sum(int(state["moved_in"]) for state in snapshot.values()) / sum(units)


def turns_of(name: str, turns: int, skew: float) -> int:
    """A rollout's turns: log-normal around `turns` (mean kept) with sigma `skew`, the same for the same name."""
    return max(1, round(turns * random.Random(name).lognormvariate(-skew * skew / 2, skew))) if skew else turns


def pct(value: Optional[float]) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def secs(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.3f} s"


def line(f: Figures) -> str:
    units = "" if f.units_max_mean is None else f"units max/mean {f.units_max_mean:.2f}, moved {pct(f.moved_share)}, "
    return (
        f"capacity {pct(f.capacity_share)}, refused {pct(f.refused_share)}, cached prompt {pct(f.cached_prompt_share)}, "
        f"ttft p50 {secs(f.ttft_p50_s)}, turn p50 {secs(f.turn_p50_s)} p95 {secs(f.turn_p95_s)}, "
        f"{f.rollouts_per_h or 0:,.0f} rollouts/h; {units}"
        + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in f.extra.items())
    )
