"""Slide defects judged from measure.js's layout and the screenshot's pixels.

`render.inspection.find_defects` runs the checks: `geometry` (overflow, text_clipped,
size_mismatch, broken_image, blank), `overlap`, `contrast` (low_contrast), all of which
ask `decoration` what a reviewer would take for decoration rather than content.
"""

from __future__ import annotations

from collections.abc import Iterable

EDGE_TOLERANCE_PX = 2.0


def beyond_sides(values: Iterable[float], names: Iterable[str], unit: str) -> str:
    """'6px past the right, 3px past the bottom' for the sides past the tolerance."""
    return ", ".join(f"{v:.0f}px {unit} {name}" for name, v in zip(names, values) if v > EDGE_TOLERANCE_PX)
