"""Horizontal (stacked) bar charts as geometry for inline SVG, drawn by templates/macros.html.j2.

Nothing is fetched or scripted: the report's charts are plain SVG in the page, coloured
by CSS classes (`s-<series>`, see static/report.css).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LABEL_WIDTH = 210
BAR_WIDTH = 360
VALUE_WIDTH = 70
ROW_HEIGHT = 22
TOP = 8


@dataclass(frozen=True)
class BarSegment:
    series: str
    value: int
    x: float
    width: float


@dataclass(frozen=True)
class Bar:
    label: str
    total: int
    y: float
    segments: tuple[BarSegment, ...]


@dataclass(frozen=True)
class Chart:
    title: str
    series: tuple[str, ...]
    bars: tuple[Bar, ...]
    empty: str  # what to say when there are no bars
    label_width = LABEL_WIDTH
    bar_height = ROW_HEIGHT - 6

    @property
    def width(self) -> int:
        return LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH

    @property
    def height(self) -> int:
        return TOP * 2 + ROW_HEIGHT * len(self.bars)


def stacked_bars(title: str, rows: Sequence[tuple[str, Mapping[str, int]]], series: Sequence[str], empty: str) -> Chart:
    """One bar per row, one segment per series (in `series` order), scaled to the largest total."""
    largest = max((sum(values.values()) for _, values in rows), default=0) or 1
    bars = []
    for i, (label, values) in enumerate(rows):
        x, segments = float(LABEL_WIDTH), []
        for name in series:
            width = BAR_WIDTH * values.get(name, 0) / largest
            if width:
                segments.append(BarSegment(name, values[name], x, width))
            x += width
        bars.append(Bar(label, sum(values.values()), TOP + i * ROW_HEIGHT, tuple(segments)))
    return Chart(title, tuple(series), tuple(bars), empty)


def bars(title: str, counts: Mapping[str, int], empty: str, ordered: bool = False) -> Chart:
    """A single-series chart, largest first unless `ordered` (keep the mapping's order)."""
    items = list(counts.items()) if ordered else sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return stacked_bars(title, [(label, {"count": n}) for label, n in items], ["count"], empty)
