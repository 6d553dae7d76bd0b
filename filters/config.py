"""Typed config of the trajectory filters (the `filters/` group)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ConfigError
from core.defects import Severity

# The built-in gates, in pipeline order: the default of `filters.gates` (filters.registry.GATES registers every gate).
DEFAULT_GATES = ("constraint", "content", "consistency", "quality")


@dataclass
class FiltersConfig:
    gates: list[str] = field(default_factory=lambda: list(DEFAULT_GATES))  # [] keeps every finished trajectory
    aspect_tolerance: float = 0.02  # relative difference of width/height ratios
    language_threshold: float = 0.5  # CJK share that makes a deck Chinese
    min_constraint_score: float = 1.0  # fraction of constraints a deck must meet
    # content gate (filters/content.py); chosen on the labelled set's tuning part alone (`python -m tests.filters.content_set`
    # prints how each value reads it; tests/filters/content_decks/README.md)
    content_duplicate_similarity: float = 0.8  # two slides whose text shingles overlap this much (Jaccard) are duplicates
    content_repeat_min_tokens: int = (
        6  # a sentence this long (words; CJK characters count one each) may not recur on another slide
    )
    content_echo_tokens: int = 10  # a run of this many request tokens (quoted titles aside) on a slide is an echo of the request
    content_foreign_share: float = 0.5  # body text share in another language that fails language_mix
    quality_reject_severity: Severity = Severity.critical  # measured defects this bad reject without a judge call
    quality_images_per_call: int = 8  # slide images per quality-judge request (the VLM's image limit)
    consistency_max_diff_chars: int = 8000  # revision diff shown to the consistency judge per injection
    json_retries: int = 2  # re-asks after a malformed judge reply
    max_concurrency: int = 16  # rollouts filtered at once


def validate_filters(cfg: FiltersConfig) -> None:
    """What the types cannot say; raises ConfigError naming the key. The gates it names are checked against the
    registry by `filters.run.check_gates`."""
    if cfg.quality_images_per_call < 1 or cfg.max_concurrency < 1:
        raise ConfigError("filters.quality_images_per_call and filters.max_concurrency must be >= 1")
