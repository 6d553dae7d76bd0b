"""Slide defects judged from measure.js's layout and the screenshot's pixels.

`render.inspection.find_defects` runs the checks: `geometry` (overflow, text_clipped,
size_mismatch, broken_image, blank), `overlap`, `contrast` (low_contrast), all of which
ask `decoration` what a reviewer would take for decoration rather than content.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

EDGE_TOLERANCE_PX = 2.0


@dataclass(frozen=True)
class Defect:
    code: str  # overflow | text_clipped | overlap | low_contrast | broken_image | blank | size_mismatch
    severity: str  # critical | major | minor
    element: str  # short CSS-like selector
    detail: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.code} ({self.severity}) {self.element}: {self.detail}"


def beyond_sides(values: Iterable[float], names: Iterable[str], unit: str) -> str:
    """'6px past the right, 3px past the bottom' for the sides past the tolerance."""
    return ", ".join(f"{v:.0f}px {unit} {name}" for name, v in zip(names, values) if v > EDGE_TOLERANCE_PX)
