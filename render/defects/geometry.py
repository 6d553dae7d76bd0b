"""Defects of where things are: overflow, text_clipped, size_mismatch, broken_image, blank."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from core.defects import Defect
from render.defects import EDGE_TOLERANCE_PX, beyond_sides
from render.defects.colour import dominant, to_hex
from render.defects.decoration import Items
from render.defects.slide import Check

BLANK_MAX_INK_SHARE = 0.001
ASPECT_TOLERANCE = 0.03
# Page shapes a slide box made for another format has: 16:9, 4:3, 16:10, ISO A landscape and portrait.
FORMAT_ASPECTS = {"16:9": 16 / 9, "4:3": 4 / 3, "16:10": 16 / 10, "\u221a2:1": 2**0.5, "1:\u221a2": 2**-0.5}
_SIDES = ("left", "top", "right", "bottom")


def overflow(layout: Mapping[str, Any], items: Items) -> list[Defect]:
    """Content ink (glyphs, an svg's drawing, a media box) past the slide edge, decoration excepted;
    or a document larger than the slide (its PDF would get another page) whose root does not clip."""
    width, height = layout["slide"]
    defects = []
    for entry in layout["outside"]:
        index = entry["item"]
        if index >= 0 and items.decorative(index):
            continue
        past = entry["past"]
        worst = max(past[0] / width, past[2] / width, past[1] / height, past[3] / height)
        why = "its glyphs, not only its line box" if entry["text"] else f"content: {items.content(index)}"
        defects.append(
            Defect(
                "overflow",
                "critical" if worst > 0.1 else "major",
                entry["el"],
                f"{entry['kind']} extends {beyond_sides(past, _SIDES, 'past the')} edge of the {width}x{height} slide ({why})",
            )
        )
    scroll_w, scroll_h = layout["scroll"]
    scrolls = scroll_w > width + EDGE_TOLERANCE_PX or scroll_h > height + EDGE_TOLERANCE_PX
    if scrolls and not defects and not layout["rootClips"]:
        defects.append(
            Defect(
                "overflow",
                "major",
                "html",
                f"document is {scroll_w}x{scroll_h}px, slide is {width}x{height}px",
            )
        )
    return defects


def text_clipped(layout: Mapping[str, Any]) -> list[Defect]:
    """Glyphs hidden by a clipping box or the clipping slide edge (the ink, not the line box)."""
    defects = []
    for entry in layout["clipped"]:
        left, top, right, bottom = entry["box"]
        hidden = entry["hidden"]
        share = max(
            (hidden[0] + hidden[2]) / max(right - left, 1),
            (hidden[1] + hidden[3]) / max(bottom - top, 1),
        )
        where = {"slide edge": "the slide edge", entry["el"]: "its own box"}.get(entry["by"], entry["by"])
        sides = beyond_sides(hidden, ("left", "above", "right", "below"), "hidden")
        defects.append(
            Defect(
                "text_clipped",
                "critical" if share > 0.5 else "major",
                entry["el"],
                f"text cut by {where}: glyphs {sides} ({share:.0%} of the text box)",
            )
        )
    return defects


def size_mismatch(layout: Mapping[str, Any], items: Items, known_sizes: Iterable[tuple[int, int]]) -> list[Defect]:
    """The box that holds the slide's content (html, body or a top-level container whose height is
    set, however: a length, var(), calc, an aspect ratio) has the computed size of another format:
    larger than the slide, another page shape, or exactly another known slide size."""
    width, height = layout["slide"]
    others = [(kw, kh) for kw, kh in known_sizes if abs(kw - width) > 2 or abs(kh - height) > 2]
    for frame in layout["frames"]:
        w, h = frame["size"]
        if not frame["sized"] or min(w / width, h / height) < 0.5:
            continue
        if any(not items.decorative(i) for i in frame["outside"]):
            continue  # content beside it: a column or a panel, not the slide
        too_big = w > width + EDGE_TOLERANCE_PX or h > height + EDGE_TOLERANCE_PX
        shape = _format(w, h)
        other_shape = abs((w / h) / (width / height) - 1.0) > ASPECT_TOLERANCE and shape is not None
        other_size = any(abs(w - kw) <= 1 and abs(h - kh) <= 1 for kw, kh in others)
        if too_big or other_shape or other_size:
            return [
                Defect(
                    "size_mismatch",
                    "major",
                    frame["el"],
                    f"laid out as {w:.0f}x{h:.0f}px ({shape or f'{w / h:.2f}:1'}) on a "
                    f"{width}x{height}px ({_format(width, height) or f'{width / height:.2f}:1'}) slide; "
                    "it holds all the content",
                )
            ]
    return []


def _format(w: float, h: float) -> str | None:
    for name, value in FORMAT_ASPECTS.items():
        if abs(w / h / value - 1) < 0.02:
            return name
    return None


def broken_images(layout: Mapping[str, Any], failures: Mapping[str, str]) -> list[Defect]:
    defects = []
    for img in layout["images"]:
        if not img["broken"]:
            continue
        reason = failures.get(img["url"], "did not load") if img["src"] else "has no src"
        defects.append(
            Defect(
                "broken_image",
                "critical",
                img["el"],
                f"img {img['src'] or ''} {reason}".replace("  ", " "),
            )
        )
    for bg in layout["backgrounds"]:
        for url in bg["urls"]:
            if url in failures:
                defects.append(
                    Defect(
                        "broken_image",
                        "critical",
                        bg["el"],
                        f"background-image {_short_url(url)} {failures[url]}",
                    )
                )
    return defects


def _short_url(url: str) -> str:
    if not url.startswith("file:"):
        return url[:80]
    parts = Path(unquote(urlparse(url).path)).parts
    return "/".join(parts[-2:])


def blank(layout: Mapping[str, Any], pixels: np.ndarray) -> list[Defect]:
    sample = pixels[::6, ::6].reshape(-1, 3)
    colour, _ = dominant(sample)
    ink = float(np.mean(np.abs(sample.astype(np.int16) - colour).max(axis=1) > 24))
    if layout["visibleText"] == 0 and layout["visibleMedia"] == 0:
        return [
            Defect(
                "blank",
                "critical",
                "body",
                f"no visible text or image ({ink:.2%} of pixels differ from {to_hex(colour)})",
            )
        ]
    if ink < BLANK_MAX_INK_SHARE:
        return [
            Defect(
                "blank",
                "critical",
                "body",
                f"pixels nearly uniform: {ink:.2%} differ from {to_hex(colour)}",
            )
        ]
    return []


CHECKS: tuple[Check, ...] = (
    lambda slide: overflow(slide.layout, slide.items),
    lambda slide: text_clipped(slide.layout),
    lambda slide: broken_images(slide.layout, slide.failures),
    lambda slide: blank(slide.layout, slide.pixels),
    lambda slide: size_mismatch(slide.layout, slide.items, slide.known_sizes),
)
