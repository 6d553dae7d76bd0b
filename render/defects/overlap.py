"""overlap: one content item hides another, judged from hit-tests in the area they share.

measure.js pairs content items (text as the ink of its lines, media as their box or an svg's
drawing) that share at least 4x4 px, 40 px² and 2% of the smaller, and hit-tests up to 24 points
there: which item is painted on top, whether it has ink at the point (an svg's empty area has
none), what lies under it, and whether a layer with a background (a scrim, a backing) lies
between the two. A pair is a defect when the top item's ink covers content of the one below:
- text, under text or under anything opaque;
- an svg's labels, or its shapes, unless only thin lines (gridlines) and empty plot area lie
  there or every point falls inside one shape (a value label on its bar);
- an image under text, unless the text has a backdrop, the image fills their common container
  (the card's picture the caption was placed on), or the text lies on the image (95% of its ink)
  where the image is plain (a title on the sky); text running over an image's edge is a defect;
- a chart's marks (an svg, canvas or img with a plain ground) under a text box that passed the
  rules above: the chart's own pixels under the box, captured with the box hidden, hold bars or
  lines at least 3 px thick; not its empty ground, thin gridlines, or the inside of one bar;
and the top item is not see-through (opacity <= 0.3, a ghost) nor the bottom one decoration;
decoration drawn over media (a ring over a photo's corner) hides nothing a reader needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from core.defects import Defect, SeverityName
from render.defects.colour import crop, dominant, parse_rgba, plain_share, region, solid_marks
from render.defects.decoration import FAINT_OPACITY, Items
from render.defects.slide import Check, RenderedSlide

OVERLAP_MIN_SIDE_PX = 4.0
OVERLAP_MIN_AREA_PX = 40.0
OVERLAP_MIN_SHARE = 0.02
PLAIN_IMAGE_SHARE = 0.85  # pixels around the glyphs that are backdrop or glyph: the image is plain there
PLACED_INSIDE = 0.95  # share of a text's ink over a picture: placed on it, not running over its edge
PICTURES = ("img", "canvas", "video")
CHART_GROUND = 0.4  # share of a chart's pixels in its most frequent colour, its plain ground (a photo has none)
MARK_DISTANCE = 48.0  # colour distance from the ground beyond which a pixel of a chart is a mark
MARK_SIDE_PX = 3.0  # the thinnest mark that counts: bars and data lines, not gridlines (1-2 px)


def overlaps(slide: RenderedSlide) -> list[Defect]:
    defects = []
    items = slide.items
    for pair in slide.layout["overlaps"]:
        share = pair["area"] / max(pair["smaller"], 1.0)
        if pair["area"] < OVERLAP_MIN_AREA_PX or share < OVERLAP_MIN_SHARE:
            continue
        why = _hidden_content(pair, slide)
        if why is None:
            continue
        a, b = items.items[pair["a"]], items.items[pair["b"]]
        both_text = a["kind"] == b["kind"] == "text"
        severity: SeverityName = "critical" if both_text and share >= 0.1 else "major" if share >= 0.1 else "minor"
        left, top, right, bottom = pair["box"]
        defects.append(
            Defect(
                "overlap",
                severity,
                a["el"],
                f"overlaps {b['el']} by {right - left:.0f}x{bottom - top:.0f}px ({share:.0%} of the smaller): {why}",
            )
        )
    return defects


def _hidden_content(pair: Mapping[str, Any], slide: RenderedSlide) -> str | None:
    """What content the top item hides, or None when it hides nothing a reader needs."""
    items = slide.items
    n = pair["n"]
    if n == 0:  # text on text (not probed), or no point could be hit-tested: judge the items alone
        if items.decorative(pair["a"]) or items.decorative(pair["b"]):
            return None
        both_text = items.items[pair["a"]]["kind"] == items.items[pair["b"]]["kind"] == "text"
        return "the glyphs of the two texts collide" if both_text else "paint order unknown"
    top, bottom = (pair["a"], pair["b"]) if pair["aTop"] else (pair["b"], pair["a"])
    upper, lower = items.items[top], items.items[bottom]
    if upper["opacity"] <= FAINT_OPACITY or top in items.ghosts:
        return None  # what is under it shows through
    if pair["topInk"] < max(1.0, 0.1 * n):
        return None  # it draws nothing there (an svg's empty area)
    if items.decorative(bottom):
        return None
    if lower["kind"] != "text" and items.decorative(top):
        return None  # an ornament over a picture's edge, not over words
    over = "the text" if upper["kind"] == "text" else f"the {upper['kind']}"
    if lower["kind"] == "text":
        return f"{over} is drawn over the text's glyphs"
    content = items.content(bottom)
    if lower["kind"] == "svg":
        return _covers_drawing(pair, over, content) or _covers_marks(pair, slide, "svg", content)
    if lower["kind"] in PICTURES and upper["kind"] == "text":
        inside = pair["inside"][0 if top == pair["a"] else 1]
        found = _covers_picture(pair, upper, inside, slide.pixels, slide.scale, lower["kind"], content)
        return found or _covers_marks(pair, slide, lower["kind"], content)
    if pair["fills"]:
        return None
    return f"{over} is drawn over the {lower['kind']}; content: {content}"


def _covers_drawing(pair: Mapping[str, Any], over: str, content: str) -> str | None:
    """An svg's labels or shapes under the top item; not gridlines and empty plot area, nor the
    inside of one shape (a value label on its bar)."""
    n, under = pair["n"], pair["under"]
    drawn = under["text"] + under["shape"]
    if under["text"] == 0 and drawn < max(2.0, 0.15 * n):
        return None
    if under["text"] == 0 and pair["shapes"] == 1 and under["shape"] == n:
        return None
    return f"{over} covers its labels or shapes at {drawn} of {n} probed points; content: {content}"


def _covers_picture(
    pair: Mapping[str, Any],
    text: Mapping[str, Any],
    inside: float,
    pixels: np.ndarray,
    scale: float,
    kind: str,
    content: str,
) -> str | None:
    """Text over a picture: a caption placed on it (it fills their container), text on a scrim or
    backing, or text placed on a plain area of it (a title on the sky) hide nothing."""
    if pair["fills"] or pair["backdrop"] * 2 >= pair["n"]:
        return None
    if inside < PLACED_INSIDE:
        return f"the text runs over the edge of the {kind}; content: {content}"
    if _plain_under(pair, text, pixels, scale):
        return None
    return f"the text covers a detailed area of the {kind} with no scrim or backing; content: {content}"


def chart_covers(layout: Mapping[str, Any], pixels: np.ndarray, scale: float) -> list[list[float]]:
    """The boxes of text over a chart whose verdict waits on the chart's own pixels beneath them, judged on
    the screenshot before the renderer captures those again with the text hidden. Watermarks are not known
    yet (they need the contrast readings): a pair they would clear is captured for nothing, never missed."""
    slide = RenderedSlide(layout, pixels, scale, (), Items(layout["items"], ()), {}, ())
    return [
        pair["cover"]
        for pair in layout["overlaps"]
        if _over_chart(pair, slide.items, pixels, scale) and _hidden_content(pair, slide) is None
    ]


def _over_chart(pair: Mapping[str, Any], items: Items, pixels: np.ndarray, scale: float) -> bool:
    """Text over a picture that is content and has a plain ground (a chart; a photo has none)."""
    if pair["cover"] is None:
        return False
    chart = pair["b"] if pair["aTop"] else pair["a"]
    return not items.decorative(chart) and dominant(region(pixels, [pair["chart"]], scale))[1] >= CHART_GROUND


def _covers_marks(pair: Mapping[str, Any], slide: RenderedSlide, kind: str, content: str) -> str | None:
    """A text box over a chart's bars or lines, read from the chart's own pixels under the box (captured
    with the box hidden); a picture without a plain ground (a photo) is left to the rules above."""
    if slide.beneath is None or not _over_chart(pair, slide.items, slide.pixels, slide.scale):
        return None
    side = max(3, round(MARK_SIDE_PX * slide.scale))
    marks = solid_marks(crop(slide.beneath, pair["cover"], slide.scale), side, MARK_DISTANCE) / slide.scale**2
    if marks < OVERLAP_MIN_AREA_PX:
        return None
    left, top, right, bottom = pair["cover"]
    return (
        f"the text box ({right - left:.0f}x{bottom - top:.0f}px there) covers the {kind}'s bars or lines "
        f"({marks:.0f}px² of them under it, read with the box hidden); content: {content}"
    )


def _plain_under(pair: Mapping[str, Any], text: Mapping[str, Any], pixels: np.ndarray, scale: float) -> bool:
    colour = parse_rgba(text["color"])
    found = region(pixels, [pair["box"]], scale)
    if colour is None or found.size == 0:
        return False
    return plain_share(found, np.array(colour[:3], dtype=np.float64)) >= PLAIN_IMAGE_SHARE


CHECKS: tuple[Check, ...] = (overlaps,)
