"""Typed config of the trajectory filters (the `filters/` group)."""

from __future__ import annotations

from dataclasses import dataclass, field

GATES = ("constraint", "consistency", "quality")


@dataclass
class FiltersConfig:
    gates: list[str] = field(default_factory=lambda: list(GATES))  # [] keeps every trajectory
    aspect_tolerance: float = 0.02  # relative difference of width/height ratios
    language_threshold: float = 0.5  # CJK share that makes a deck Chinese
    min_constraint_score: float = 1.0  # fraction of constraints a deck must meet
