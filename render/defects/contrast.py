"""low_contrast: every visible text run (HTML and svg <text>, at any opacity) against the pixels behind it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.defects import Defect, SeverityName
from render.defects.colour import background, contrast_ratio, parse_rgba, region, to_hex
from render.defects.decoration import Items
from render.defects.slide import Check


@dataclass(frozen=True)
class Reading:
    """A text run's colour as seen (its colour composited at its opacity) and the colour behind it."""

    seen: np.ndarray
    background: np.ndarray
    ratio: float
    alpha: float


def read_runs(texts: Sequence[Mapping[str, Any]], pixels: np.ndarray, scale: float) -> list[Reading | None]:
    """One reading per text run; None where contrast cannot be read from colours (gradient or
    transparent fill, shadows and strokes, blend modes and filters) or nothing is visible."""
    return [_read(run, pixels, scale) for run in texts]


def _read(run: Mapping[str, Any], pixels: np.ndarray, scale: float) -> Reading | None:
    colour = parse_rgba(run["color"])
    fill = parse_rgba(run["fill"]) if run["fill"] else colour
    if colour is None or fill is None or fill[3] == 0 or run["shadow"] or run["blend"]:
        return None
    found = region(pixels, run["rects"], scale)
    if found.size == 0:
        return None
    alpha = colour[3] * run["opacity"]
    text_rgb = np.array(colour[:3], dtype=np.float64)
    ground = background(found, text_rgb, alpha)
    seen = alpha * text_rgb + (1 - alpha) * ground
    return Reading(seen, ground, contrast_ratio(seen, ground), alpha)


def low_contrast(texts: Sequence[Mapping[str, Any]], readings: Sequence[Reading | None], items: Items) -> list[Defect]:
    """WCAG 2.x: 4.5:1, or 3:1 for large text (>= 24 px, or >= 18.66 px bold); runs without letters
    or digits and runs of decoration (see render/defects/decoration.py) are not judged."""
    defects = []
    for run, reading in zip(texts, readings):
        if reading is None or not run["letters"]:
            continue
        index = run["item"]
        if index >= 0 and items.decorative(index):
            continue
        large = run["size"] >= 24 or (run["size"] >= 18.66 and run["weight"] >= 700)
        needed = 3.0 if large else 4.5
        ratio = reading.ratio
        if ratio >= needed:
            continue
        severity: SeverityName = "critical" if ratio < 2.0 else "major" if ratio < 3.0 else "minor"
        faded = f" at opacity {reading.alpha:.2f}" if reading.alpha < 1 else ""
        where = " in an svg" if index >= 0 and items.items[index]["kind"] == "svg" else ""
        defects.append(
            Defect(
                "low_contrast",
                severity,
                run["el"],
                f"contrast {ratio:.2f}:1 < {needed}:1 (text {to_hex(reading.seen)} on "
                f"{to_hex(reading.background)}, {run['size']:.0f}px{faded}{where}; content: "
                f"{run['chars']} characters, not a faint display-size watermark)",
            )
        )
    return defects


CHECKS: tuple[Check, ...] = (lambda slide: low_contrast(slide.layout["texts"], slide.readings, slide.items),)
