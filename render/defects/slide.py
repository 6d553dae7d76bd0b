"""What every check of a rendered slide reads (`RenderedSlide`), and the shape of a check.

Each module of render/defects/ lists its checks in `CHECKS`; `render.inspection.find_defects` runs every module's list
on one `RenderedSlide` and orders what they found by severity, then by the defect table's order (core/defects.py), so
a new check is its function and its line in its module's `CHECKS`, and its code one row in the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.defects import Defect
from render.defects.decoration import Items

if TYPE_CHECKING:
    from render.defects.contrast import Reading


@dataclass(frozen=True)
class RenderedSlide:
    layout: Mapping[str, Any]  # measure.js's result
    pixels: np.ndarray  # the screenshot, HxWx3 uint8
    scale: float  # screenshot pixels per CSS pixel
    readings: Sequence[Reading | None]  # each text run's colour against what is behind it (render.defects.contrast)
    items: Items  # the page's items, and which a reviewer would take for decoration
    failures: Mapping[str, str]  # the URL of each failed or blocked request -> why
    known_sizes: Iterable[tuple[int, int]]  # slide sizes that betray a layout made for another format
    beneath: np.ndarray | None = None  # the screenshot with the text boxes over charts hidden, where there are any


Check = Callable[[RenderedSlide], Iterable[Defect]]
