"""inspect_slide as the model calls it: what the observation tells the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.inspect import RENDERER
from agents.tools.toolsets import toolset_for
from core.records import ToolCall
from render.renderer import Renderer
from tests.rendered import session_loop

LOADS_FROM_ELSEWHERE = """<html><head><link rel="stylesheet" href="https://fonts.example.com/inter.css">
<style>body { margin: 0; background: url(file:///etc/hosts); }</style></head>
<body><h1>Tides</h1><script src="http://cdn.example.com/chart.js"></script></body></html>"""


@pytest.mark.chromium
@session_loop
async def test_the_observation_says_which_requests_were_blocked(renderer: Renderer, tmp_path: Path) -> None:
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "slide_01.html").write_text(LOADS_FROM_ELSEWHERE, encoding="utf-8")
    ctx = ToolContext(Workspace(tmp_path), "presenter", {RENDERER: renderer})
    call = ToolCall("c1", "inspect_slide", json.dumps({"html_file": "slides/slide_01.html"}))
    obs = await toolset_for("presenter").call(ctx, call)
    assert not obs.is_error, obs.text
    assert "3 request(s) of the slide were blocked" in obs.text, obs.text
    assert "2 to external URLs" in obs.text and "1 to files outside the workspace" in obs.text
    assert "https://fonts.example.com/inter.css" in obs.text and "download_file" in obs.text


@pytest.mark.chromium
@session_loop
async def test_a_slide_loading_only_its_workspace_gets_no_note(renderer: Renderer, tmp_path: Path) -> None:
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "slide_01.html").write_text("<html><body><h1>Tides</h1></body></html>", encoding="utf-8")
    ctx = ToolContext(Workspace(tmp_path), "presenter", {RENDERER: renderer})
    obs = await toolset_for("presenter").call(
        ctx, ToolCall("c1", "inspect_slide", json.dumps({"html_file": "slides/slide_01.html"}))
    )
    assert "blocked" not in obs.text, obs.text
