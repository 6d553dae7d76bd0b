"""A rendered slide described in text, for agent models that read no images (`llm.vision=false`).

Built from what measure.js already returns for each render (text runs with their boxes, sizes,
weights and colours; images; the page boxes), so it costs nothing beyond the render.
"""

from __future__ import annotations

from typing import Any, Mapping

MAX_LINES = 30


def _bbox(rects: list[list[float]]) -> tuple[int, int, int, int]:
    left, top = min(r[0] for r in rects), min(r[1] for r in rects)
    right, bottom = max(r[2] for r in rects), max(r[3] for r in rects)
    return round(left), round(top), round(right - left), round(bottom - top)


def _text_line(run: Mapping[str, Any]) -> tuple[tuple[int, int], str]:
    x, y, w, h = _bbox(run["rects"])
    weight = "bold" if run.get("weight", 400) >= 600 else "regular"
    faded = f", opacity {run['opacity']:g}" if run.get("opacity", 1) < 1 else ""
    line = (
        f"- {run.get('el', '?')}: text at ({x}, {y}) {w}x{h} px, {run.get('chars', 0)} characters, "
        f"{run.get('size', 0):g} px {weight}, colour {run.get('color', '?')}{faded}"
    )
    return (y, x), line


def layout_summary(layout: Mapping[str, Any], width: int, height: int) -> str:
    """Element boxes, text sizes and colours of a rendered slide, top to bottom."""
    placed = [_text_line(run) for run in layout.get("texts", ()) if run.get("rects")]
    lines = [line for _, line in sorted(placed)]
    for image in layout.get("images", ()):
        state = "broken: it did not load" if image.get("broken") else "loaded"
        lines.append(f"- {image.get('el', 'img')}: image {image.get('src') or image.get('url', '?')!r} ({state})")
    shown = lines[:MAX_LINES]
    if len(lines) > MAX_LINES:
        shown.append(f"- ... and {len(lines) - MAX_LINES} more element(s)")
    head = f"Layout of the rendered slide ({width}x{height} px), described in text because you read no images:"
    return "\n".join([head, *shown] if shown else [head, "- nothing visible: the slide is blank"])
