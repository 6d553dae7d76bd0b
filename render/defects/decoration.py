"""Decoration or content, decided as a reviewer would: from several signals, never one alone.

An item (measure.js `items`: a text block or a media element) is decoration when it is
- a background: it covers the slide, sits behind the page (negative z-index), or is a picture
  absolutely filling its container (a card's photo under its caption);
- marked decorative by its author: aria-hidden, role presentation/none, an img with alt="";
- media that is faint (opacity <= 0.3), or an svg drawing a plain shape (at most 3 shapes, no
  text) that is large (>= 120 px) or ignores the pointer: blobs, waves, rings; an svg with text
  (a chart, a diagram) is content unless marked or behind the page;
- text that is a ghost: display-sized (>= 48 px and twice the body text), short (<= 16
  characters) and nearly invisible (contrast < 1.5:1 against the pixels behind it): watermarks.
Low opacity alone never makes text decoration, and a shape drawn over content still hides it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FAINT_OPACITY = 0.3
PLAIN_SHAPES = 3
LARGE_SHAPE_PX = 120
GHOST_CONTRAST = 1.5
GHOST_MIN_PX = 48
GHOST_MAX_CHARS = 16


@dataclass(frozen=True)
class Items:
    """The slide's content items and the reviewer's view of each."""

    items: Sequence[Mapping[str, Any]]
    ghosts: Collection[int]  # text items that are watermarks (see `ghost_items`)

    def decorative(self, index: int) -> bool:
        item = self.items[index]
        if item["marked"]:
            return True
        if item["kind"] == "text":
            return index in self.ghosts
        if item["behind"]:
            return True
        if item["svgText"]:
            return False  # a drawing with labels is read, whatever its size or opacity
        return (
            item["full"]
            or item["fills"]
            or item["opacity"] <= FAINT_OPACITY
            or (_plain_shape(item) and (item["side"] >= LARGE_SHAPE_PX or item["pointer"]))
        )

    def content(self, index: int) -> str:
        """Why the item counts as content, in a few words."""
        item = self.items[index]
        kind = item["kind"]
        if kind == "text":
            return f"{item['chars']} characters of text at {item['size']:.0f}px"
        if kind == "svg":
            if item["svgText"]:
                return f"a drawing with text and {item['shapes']} shapes"
            if _plain_shape(item):
                return f"an svg of {item['shapes']} shapes, {item['side']:.0f}px: an icon, not a large plain shape"
            return f"a drawing of {item['shapes']} shapes"
        if kind == "img":
            return "an image not marked decorative"
        return f"a {kind}"


def _plain_shape(item: Mapping[str, Any]) -> bool:
    return item["kind"] == "svg" and not item["svgText"] and item["shapes"] <= PLAIN_SHAPES


def ghost_items(
    texts: Sequence[Mapping[str, Any]],
    items: Sequence[Mapping[str, Any]],
    ratios: Sequence[float | None],
) -> frozenset[int]:
    """Text items that are watermarks: display-sized, short, and every run of them nearly invisible.

    `ratios` holds each text run's measured contrast (None where it could not be measured)."""
    body = _body_size(texts)
    display = max(GHOST_MIN_PX, 2 * body)
    faint: dict[int, bool] = {}
    for run, ratio in zip(texts, ratios):
        index = run["item"]
        if index < 0 or items[index]["kind"] != "text":
            continue
        faint[index] = faint.get(index, True) and ratio is not None and ratio < GHOST_CONTRAST
    return frozenset(
        i for i, is_faint in faint.items() if is_faint and items[i]["size"] >= display and items[i]["chars"] <= GHOST_MAX_CHARS
    )


def _body_size(texts: Sequence[Mapping[str, Any]]) -> float:
    """The font size of most characters on the slide (the body text)."""
    sizes = sorted((run["size"], run["chars"]) for run in texts if run["letters"])
    total = sum(chars for _, chars in sizes)
    seen = 0
    for size, chars in sizes:
        seen += chars
        if seen * 2 >= total:
            return float(size)
    return 0.0
