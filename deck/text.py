"""The deck's text as a reader reads it, for the content gate (`filters/content_reading.py`).

`read_slide_text` runs on each printed page (the deck export's page reader, `deck.export.page_reader`)
and evaluates `render/page/slide_text.js`: the slide's text blocks, each with its box, its type size
and its role as the DOM says it (heading, prose, table, code, figure, furniture), and its pictures.
The deck export writes them for the whole deck as `deck_text.json`:

    {"slides": [{"file": "slide_01.html", "size": [1280, 720],
                 "blocks": [{"text": "...", "box": [x, y, w, h], "size": 44.0, "role": "heading"}, ...],
                 "pictures": [[x, y, w, h], ...]}, ...]}

in CSS px; a slide whose text could not be read has {"file", "error"} instead.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Sequence

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from render.defects import EDGE_TOLERANCE_PX
from render.page_script import page_script

log = logging.getLogger(__name__)

TEXT_JS = page_script("slide_text.js")


async def read_slide_text(page: Page) -> dict[str, Any]:
    """The slide's reading; a script error in the page becomes {"error": ...}, not an exception."""
    size = page.viewport_size or {"width": 0, "height": 0}
    try:
        return json.loads(await page.evaluate(TEXT_JS, {**size, "tol": EDGE_TOLERANCE_PX}))
    except PlaywrightError as exc:
        log.warning("reading the text of %s failed: %s", page.url, exc)
        return {"error": f"text not read: {exc}"}


def write_deck_text(files: Sequence[Path], readings: Sequence[dict[str, Any]], path: Path) -> None:
    """deck_text.json: each slide's reading under its file name, in slide order."""
    slides = [{"file": file.name, **reading} for file, reading in zip(files, readings)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"slides": slides}, ensure_ascii=False), encoding="utf-8")
