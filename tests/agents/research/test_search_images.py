"""search_images: the offline library extracted from ../shared/data, Openverse and Wikimedia Commons on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from PIL import Image

from agents.config import ToolsConfig
from agents.research.imagelib import LIBRARY_FILE, ImageLibrary
from agents.sandbox import Workspace
from fakes.http_server import ScriptedAnswer, ScriptedServer
from tests.agents.research.helpers import Call, pointed_at, response


def test_library_holds_real_figures_with_their_printed_captions(library_path: Path) -> None:
    entries = json.loads((library_path / LIBRARY_FILE).read_text())
    captions = {e["id"]: e["caption"] for e in entries}
    assert captions["arxiv_1706.03762-p3-1"] == "Figure 1: The Transformer - model architecture."
    assert any(c.startswith("图") for c in captions.values())  # Chinese figure captions (compiler notes)
    assert len(entries) <= 6 * 11  # a few largest figures per document
    for e in entries:
        with Image.open(library_path / e["file"]) as img:
            assert (img.width, img.height) == (e["width"], e["height"])


def test_library_search_ranks_by_caption_in_both_languages(library_path: Path) -> None:
    library = ImageLibrary(library_path)
    assert library.search("transformer model architecture", 3)[0].url == "arxiv_1706.03762-p3-1.png"
    assert library.search("布尔短路翻译", 3)[0].caption.startswith("图")
    assert library.search("zzyzx", 3) == []


async def test_offline_results_are_copied_into_the_workspace(call: Call, workspace: Workspace) -> None:
    obs = await call("search_images", query="Transformer architecture")
    assert not obs.is_error, obs.text
    assert "saved to assets/library/arxiv_1706.03762-p3-1.png" in obs.text and "(1520x2239)" in obs.text
    assert "caption: Figure 1: The Transformer - model architecture." in obs.text
    with Image.open(workspace.root / "assets/library/arxiv_1706.03762-p3-1.png") as img:
        assert img.size == (1520, 2239)


async def test_openverse_backend(server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]) -> None:
    server.on("/v1/images/", ScriptedAnswer(response("openverse.json")))
    call = research_call(pointed_at(tools_config, server.url, image_backend="openverse"))
    obs = await call("search_images", query="golden gate bridge")
    assert not obs.is_error, obs.text
    assert "1. Golden Gate Bridge at sunset (1024x683) https://live.staticflickr.com/65535/12345_abc_b.jpg" in obs.text
    assert "licence: BY 2.0 by Jane Doe | from: https://www.flickr.com/photos/example/12345" in obs.text
    assert "2. Bridge (size unknown)" in obs.text
    (seen,) = server.seen("/v1/images/")
    assert seen.query["q"] == "golden gate bridge" and seen.headers["Authorization"] == "Bearer key-openverse"


async def test_wikimedia_backend_orders_by_rank_and_prefers_scaled_copies(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/w/api.php", ScriptedAnswer(response("wikimedia.json")))
    call = research_call(pointed_at(tools_config, server.url, image_backend="wikimedia"))
    obs = await call("search_images", query="transformer")
    assert obs.text.index("Attention mechanism") < obs.text.index("Transformer, full architecture")
    assert "(1280x1811) https://upload.wikimedia.org/wikipedia/commons/thumb/" in obs.text
    assert "caption: A full diagram of the Transformer architecture." in obs.text and "licence: CC BY 4.0 by dvgodoy" in obs.text
    (seen,) = server.seen("/w/api.php")
    assert seen.query["gsrsearch"] == "transformer filetype:bitmap" and seen.query["generator"] == "search"


async def test_no_images_and_server_errors(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/w/api.php", ScriptedAnswer({"batchcomplete": ""}), ScriptedAnswer("down", 503))
    call = research_call(pointed_at(tools_config, server.url, image_backend="wikimedia", http_retries=0))
    assert "No images for 'nothing'" in (await call("search_images", query="nothing")).text
    failed = await call("search_images", query="down")
    assert failed.is_error and "wikimedia: HTTP 503" in failed.text
