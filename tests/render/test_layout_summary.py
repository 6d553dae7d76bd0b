"""inspect_slide for an agent model that reads no images: the measured defects and the layout in text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.inspect import RENDERER, VISION
from agents.tools.toolsets import toolset_for
from core.records import ToolCall
from render.renderer import Renderer
from tests.rendered import SLIDES, session_loop


async def inspect(renderer: Renderer, workspace: Path, vision: bool) -> object:
    (workspace / "slides").mkdir(exist_ok=True)
    (workspace / "slides" / "slide_01.html").write_text((SLIDES / "overlap_1_title_en.html").read_text(), encoding="utf-8")
    ctx = ToolContext(Workspace(workspace), "presenter", {RENDERER: renderer, VISION: vision})
    call = ToolCall("c1", "inspect_slide", json.dumps({"html_file": "slides/slide_01.html"}))
    return await toolset_for("presenter").call(ctx, call)


@pytest.mark.chromium
@session_loop
async def test_a_text_only_model_gets_the_layout_instead_of_the_image(renderer: Renderer, tmp_path: Path) -> None:
    seen = await inspect(renderer, tmp_path, vision=True)
    blind = await inspect(renderer, tmp_path, vision=False)
    assert seen.images and "the image is attached" in seen.text
    assert not blind.images and "image is attached" not in blind.text
    assert "overlap (critical) h2" in blind.text  # the measured defects, as for a vision model
    layout = blind.text.split("Layout of the rendered slide (1280x720 px)")[1].splitlines()
    assert any(line.startswith("- h2: text at (") and " px bold, colour rgb(" in line for line in layout), layout
    assert blind.measured.png and (tmp_path / blind.measured.png).is_file()  # the critic still looks at the render
