"""Environment-grounded slide inspection: defects measured in the rendered page and its pixels.

`measure.js` runs once per render and returns ink boxes, clipping, overlaps with their hit-tests,
text colours, image states and the signals that tell decoration from content; `find_defects`
turns that plus the screenshot into defects (the checks live in render/defects/). Contrast and
blankness come from the pixels, so gradients and background images count as rendered.
The thresholds and severities are documented in docs/inspection.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.defects import DEFECT_CODES, Defect
from render.defects import EDGE_TOLERANCE_PX, contrast, geometry, overlap
from render.defects.contrast import read_runs
from render.defects.decoration import Items, ghost_items
from render.defects.overlap import (
    OVERLAP_MIN_AREA_PX,
    OVERLAP_MIN_SHARE,
    OVERLAP_MIN_SIDE_PX,
)
from render.defects.slide import Check, RenderedSlide
from render.page_script import page_script

if TYPE_CHECKING:
    from render.renderer import Renderer

MEASURE_JS = page_script("measure.js")
COVERS_JS = page_script("covers.js")

MAX_PER_CODE = 6
_SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2}
CODE_ORDER = {code: i for i, code in enumerate(DEFECT_CODES)}
CHECKS: tuple[Check, ...] = (*geometry.CHECKS, *overlap.CHECKS, *contrast.CHECKS)  # each module's list of checks


@dataclass(frozen=True)
class SlideInspection:
    file: str
    aspect: str
    width: int
    height: int
    png: Path
    defects: tuple[Defect, ...]
    seconds: float
    blocked_requests: int
    blocked: Mapping[str, str]  # url -> why the renderer refused it (render.renderer.BLOCKED_*)
    layout: Mapping[str, Any] = field(default_factory=dict)  # measure.js's result

    def report(self) -> str:
        """The short text observation given to the model: one line per defect."""
        if not self.defects:
            return "No defects measured."
        return "\n".join(d.line() for d in self.defects)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "aspect": self.aspect,
            "width": self.width,
            "height": self.height,
            "png": str(self.png),
            "defects": [d.to_dict() for d in self.defects],
        }


async def inspect_slide(
    renderer: Renderer,
    workspace: Path,
    html_file: str,
    aspect: str,
    png_path: Path | None = None,
) -> SlideInspection:
    """Render `html_file` (relative to `workspace`) and measure its defects.

    The PNG goes to `png_path`, by default `<workspace>/renders/<stem>.png`.
    """
    root = workspace.resolve()
    html = (root / html_file).resolve()
    if not html.is_relative_to(root):
        raise ValueError(f"{html_file}: outside the workspace {root}")
    png = png_path or root / "renders" / f"{html.stem}.png"
    # The PDF page is printed right after (not waited for), so that exporting an unchanged slide renders nothing.
    result = await renderer.render(html, aspect, png_path=png, workspace=root, print_later=True)
    return SlideInspection(
        file=html_file,
        aspect=aspect,
        width=result.width,
        height=result.height,
        png=result.png_path,
        defects=result.defects,
        seconds=result.seconds,
        blocked_requests=result.blocked_requests,
        blocked={url: why for url, why in result.failed_requests.items() if why.startswith("blocked")},
        layout=result.layout,
    )


def measure_args(width: int, height: int) -> dict[str, float]:
    """The argument of MEASURE_JS for a slide of this size."""
    return {
        "width": width,
        "height": height,
        "tol": EDGE_TOLERANCE_PX,
        "minSide": OVERLAP_MIN_SIDE_PX,
        "minArea": OVERLAP_MIN_AREA_PX,
        "minShare": OVERLAP_MIN_SHARE,
    }


def find_defects(
    layout: Mapping[str, Any],
    pixels: np.ndarray,
    failures: Mapping[str, str],
    known_sizes: Iterable[tuple[int, int]],
    scale: float = 1.0,
    beneath: np.ndarray | None = None,
) -> tuple[Defect, ...]:
    """All defects of one rendered slide.

    `layout` is measure.js's result, `pixels` the screenshot as an HxWx3 uint8 array,
    `failures` maps the URL of each failed or blocked request to its reason,
    `known_sizes` are slide sizes that betray a layout made for another format,
    `beneath` the screenshot with the text over charts hidden where the renderer captured that (render/renderer.py `Shot`).
    """
    readings = read_runs(layout["texts"], pixels, scale)
    items = Items(layout["items"], ghost_items(layout["texts"], layout["items"], [r.ratio if r else None for r in readings]))
    slide = RenderedSlide(layout, pixels, scale, readings, items, failures, known_sizes, beneath)
    return _capped([defect for check in CHECKS for defect in check(slide)])


def _capped(defects: list[Defect]) -> tuple[Defect, ...]:
    """Most severe first; at most MAX_PER_CODE per code, the last one noting how many more."""
    ordered = sorted(dict.fromkeys(defects), key=_rank)
    kept: list[Defect] = []
    for code in dict.fromkeys(d.code for d in ordered):
        same = [d for d in ordered if d.code == code]
        if len(same) > MAX_PER_CODE:
            last = same[MAX_PER_CODE - 1]
            more = len(same) - MAX_PER_CODE
            same = [
                *same[: MAX_PER_CODE - 1],
                Defect(
                    last.code,
                    last.severity,
                    last.element,
                    f"{last.detail} (+{more} more)",
                ),
            ]
        kept.extend(same)
    return tuple(sorted(kept, key=_rank))


def _rank(defect: Defect) -> tuple[int, int]:
    """Most severe first; of one severity, in the defect table's order (core/defects.py)."""
    return _SEVERITY_ORDER[defect.severity], CODE_ORDER[defect.code]
