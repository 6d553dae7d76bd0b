"""The deck's text as the content gate reads it (deck/text.py, render/page/slide_text.js): each block's role from the DOM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deck.export import export_deck
from render.renderer import Renderer
from tests.rendered import session_loop

SLIDE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><style>
body { margin: 0; width: 1280px; height: 720px; font-family: "Noto Sans", sans-serif; }
h1 { font-size: 40px; } p, td, th { font-size: 20px; }
</style></head><body>
<header><h1>Results</h1><span class="brand">ACME</span></header>
<p>Accuracy rose on <b>every</b> split.<br>Latency did not.</p>
<table><caption>Table 1: accuracy</caption><tr><th>Model</th></tr><tr><td>81.2</td></tr></table>
<pre><code>x = 1
y = 2</code></pre>
<svg width="200" height="100"><title>a chart</title><text x="10" y="50" font-size="14">0.04</text></svg>
<math><mi>x</mi><mo>=</mo><mn>1</mn></math>
<div class="bar-chart"><span>the</span></div>
<p style="font-family: 'DejaVu Sans Mono', monospace">print(total)</p>
<div style="display: none">hidden</div>
<footer>Confidential · <span class="page-number">3</span></footer>
</body></html>
"""


@pytest.mark.chromium
@session_loop
async def test_each_text_block_has_the_role_its_elements_give_it(renderer: Renderer, tmp_path: Path) -> None:
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "slide_01.html").write_text(SLIDE, encoding="utf-8")
    text = tmp_path / "deck_text.json"
    deck = await export_deck(
        renderer, tmp_path / "slides", "16:9", tmp_path / "deck.pdf", png_dir=tmp_path / "png", text_path=text
    )
    assert deck.text == text
    [slide] = json.loads(text.read_text(encoding="utf-8"))["slides"]
    assert slide["file"] == "slide_01.html" and slide["size"] == [1280, 720]
    assert {b["text"]: b["role"] for b in slide["blocks"]} == {
        "Results": "heading",
        "ACME": "furniture",
        "Accuracy rose on every split.\nLatency did not.": "prose",
        "Table 1: accuracy": "prose",
        "Model": "table",
        "81.2": "table",
        "x = 1\ny = 2": "code",
        "0.04": "figure",
        "x=1": "figure",
        "the": "figure",
        "print(total)": "code",
        "Confidential · 3": "furniture",
    }
    heading = slide["blocks"][0]
    assert heading["size"] == 40 and 0 <= heading["box"][1] < 100 and heading["box"][2] > 0
    assert len(slide["pictures"]) == 1  # the svg
