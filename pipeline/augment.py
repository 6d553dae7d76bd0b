"""Constraint augmentation: draw verifiable constraints and state them in the task's language."""

from __future__ import annotations

import random

from agents.workflow import LANGUAGE_NAMES
from core.records import Constraints
from pipeline.config import ConstraintMix

ASPECT_NAMES = {
    "en": {"16:9": "16:9 widescreen", "4:3": "4:3", "A1": "an A1 portrait poster"},
    "zh": {"16:9": "16:9 宽屏", "4:3": "4:3", "A1": "A1 竖版海报"},
}


def _pick(rng: random.Random, probabilities: dict[str, float]) -> str:
    keys = list(probabilities)
    return rng.choices(keys, weights=[probabilities[k] for k in keys])[0]


def draw_constraints(rng: random.Random, mix: ConstraintMix, language: str) -> Constraints:
    """Slide count, aspect ratio and language drawn independently; a slide bucket yields an exact count."""
    slides = _pick(rng, mix.slides)
    count = None
    if slides != "free":
        lo, hi = (int(x) for x in slides.split("-"))
        count = rng.randint(lo, hi)
    aspect = _pick(rng, mix.aspect)
    return Constraints(
        slides_min=count,
        slides_max=count,
        aspect_ratio=None if aspect == "free" else aspect,
        language=language if rng.random() < mix.language_explicit else None,
    )


def slide_bucket(constraints: Constraints, buckets: dict[str, float]) -> str:
    """The configured bucket ("1-10", "free", ...) a task's slide count falls in."""
    if constraints.slides_min is None:
        return "free"
    for bucket in buckets:
        if bucket != "free":
            lo, hi = (int(x) for x in bucket.split("-"))
            if lo <= constraints.slides_min <= hi:
                return bucket
    return "other"


def constraint_text(constraints: Constraints, language: str) -> str:
    """The constraints as a sentence in the task's language ('' when all are free)."""
    lang = "zh" if language == "zh" else "en"
    parts = []
    n = constraints.slides_min
    if n is not None:
        parts.append(f"共 {n} 页" if lang == "zh" else f"exactly {n} slide{'s' if n != 1 else ''}")
    if constraints.aspect_ratio:
        name = ASPECT_NAMES[lang].get(constraints.aspect_ratio, constraints.aspect_ratio)
        parts.append(f"版式为{name}" if lang == "zh" else f"{name} format")
    if constraints.language:
        name = LANGUAGE_NAMES[lang].get(constraints.language, constraints.language)
        parts.append(f"使用{name}撰写" if lang == "zh" else f"written in {name}")
    if not parts:
        return ""
    return "要求：" + "；".join(parts) + "。" if lang == "zh" else "Requirements: " + "; ".join(parts) + "."
