"""What Chromium laid out on a slide, read for the editable PPTX (`deck/pptx.py`).

`read_slide_layout` is the renderer's page reader (`Renderer(read_page=...)`): it runs on the
loaded page right before its PDF page is printed, so the deck export gets it with the PDF (also
for slides whose inspection printed them earlier). It evaluates `render/page/slide_layout.js` and captures,
at twice the slide's resolution, the elements PowerPoint has no equivalent for; what it hides
for a capture it shows again before the print.
Pseudo-elements have no DOM boxes: those of ::before and ::after come from a CDP DOM snapshot,
taken only for pages that have them; list markers are placed as Chromium places them.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import CDPSession, Page
from playwright.async_api import Error as PlaywrightError

from render.defects import EDGE_TOLERANCE_PX
from render.page_script import page_script

log = logging.getLogger(__name__)

LAYOUT_JS = page_script("slide_layout.js")
SHOT_SCALE = 2.0  # device pixels per CSS px of the pictures made of elements

# Hide what must not show on an element's picture, keeping how to show it again (_RESTORE_JS).
_PREPARE_JS = """({ index, mode, hide }) => {
  const all = document.querySelectorAll("*");
  const saved = [];
  const set = (el, prop, value) => { saved.push([el, prop, el.style.getPropertyValue(prop), el.style.getPropertyPriority(prop)]); el.style.setProperty(prop, value, "important"); };
  const el = all[index];
  if (mode === "own" && el) {
    for (const child of el.querySelectorAll("*")) set(child, "visibility", "hidden");
    set(el, "color", "transparent");
    set(el, "-webkit-text-fill-color", "transparent");
    set(el, "text-shadow", "none");
  }
  for (const i of hide) set(all[i], "visibility", "hidden");
  window.__slideLayoutRestore = () => { for (const [e, p, v, prio] of saved.reverse()) { if (v) e.style.setProperty(p, v, prio); else e.style.removeProperty(p); } };
}"""
_RESTORE_JS = "() => { window.__slideLayoutRestore(); delete window.__slideLayoutRestore; }"


@dataclass(frozen=True)
class SlideLayout:
    """The layout JSON (see slide_layout.js) and the PNGs of the elements captured as pictures."""

    data: dict[str, Any] = field(default_factory=dict)
    shots: dict[int, bytes] = field(default_factory=dict)
    error: str | None = None  # why the layout could not be read: the slide is exported as one picture


async def read_slide_layout(page: Page, cdp: CDPSession) -> SlideLayout:
    """The slide's layout; a script error in the page becomes `error`, not an exception."""
    size = page.viewport_size or {"width": 0, "height": 0}
    args = {**size, "tol": EDGE_TOLERANCE_PX}  # the slide edge as the inspection sees it
    try:
        data = json.loads(await page.evaluate(LAYOUT_JS, {**args, "pseudo": None}))
        if data.get("needs") == "pseudo":
            data = json.loads(await page.evaluate(LAYOUT_JS, {**args, "pseudo": await _pseudo_boxes(cdp)}))
        shots = {shot["id"]: await _capture(page, cdp, shot) for shot in data["shots"] if min(shot["rect"][2:]) >= 1}
    except PlaywrightError as exc:
        log.warning("reading the layout of %s failed: %s", page.url, exc)
        return SlideLayout(error=f"layout not read: {exc}")
    return SlideLayout(data, shots)


async def _pseudo_boxes(cdp: CDPSession) -> dict[int, dict[str, list[float]]]:
    """Border boxes [x, y, w, h] of the ::before, ::after and ::marker boxes, by their element's index
    in document order (as `document.querySelectorAll("*")` lists elements). One DOM snapshot: a
    few ms, where asking for each box's model took one round trip per box."""
    snapshot = await cdp.send("DOMSnapshot.captureSnapshot", {"computedStyles": []})
    document, strings = snapshot["documents"][0], snapshot["strings"]
    nodes = document["nodes"]
    pseudo = dict(zip(nodes["pseudoType"]["index"], nodes["pseudoType"]["value"]))
    if not pseudo:
        return {}
    index: dict[int, int] = {}  # snapshot node -> element index
    outside: set[int] = set()  # nodes inside a shadow root, which querySelectorAll does not list
    for node, (kind, parent) in enumerate(zip(nodes["nodeType"], nodes["parentIndex"])):
        if kind == 11 or parent in outside:
            outside.add(node)
        elif kind == 1 and node not in pseudo:
            index[node] = len(index)
    boxes: dict[int, dict[str, list[float]]] = {}
    for node, bounds in zip(document["layout"]["nodeIndex"], document["layout"]["bounds"]):
        host = nodes["parentIndex"][node]
        if node in pseudo and host in index:
            boxes.setdefault(index[host], {}).setdefault(strings[pseudo[node]], bounds)
    return boxes


async def _capture(page: Page, cdp: CDPSession, shot: dict[str, Any]) -> bytes:
    """A PNG of one element's box at SHOT_SCALE, with what must not show hidden for the capture."""
    x, y, w, h = shot["rect"]
    clip = {"x": x, "y": y, "width": w, "height": h, "scale": SHOT_SCALE}
    hiding = shot["mode"] == "own" or bool(shot.get("hide"))
    if hiding:
        await page.evaluate(_PREPARE_JS, {"index": shot.get("index", -1), "mode": shot["mode"], "hide": shot.get("hide", [])})
    try:
        result = await cdp.send("Page.captureScreenshot", {"format": "png", "clip": clip, "optimizeForSpeed": True})
    finally:
        if hiding:
            await page.evaluate(_RESTORE_JS)
    return base64.b64decode(result["data"])
