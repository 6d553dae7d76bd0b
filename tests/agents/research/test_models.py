"""document_analyze and image_caption through a fake OpenAI server; image_generation through a fake images endpoint."""

from __future__ import annotations

import base64
import io
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest
from PIL import Image

from agents.config import ImageGenerationConfig, ToolsConfig
from agents.research.runtime import build_research
from agents.sandbox import Workspace
from core.config import LLMConfig, RoleConfig
from core.llm.players import Players
from fakes.http_server import ScriptedAnswer, ScriptedServer
from fakes.openai_server import ErrorReply, FakeOpenAIServer, Reply
from tests.agents.research.helpers import Call

pytestmark = pytest.mark.usefixtures("close_model_clients")  # tests/conftest.py

ROLES = {"document_analyzer": RoleConfig(model="reader"), "image_captioner": RoleConfig(model="looker")}


def _png(size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


def _text_of(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def test_model_tools_are_offered_only_when_configured(tools_config: ToolsConfig, tmp_path: Path) -> None:
    bare = build_research(tools_config, tmp_path)
    assert bare.unavailable_tools() == {"document_analyze", "image_caption", "image_generation"}
    full = build_research(replace(tools_config, image_generation=ImageGenerationConfig()), tmp_path, Players(LLMConfig(), ROLES))
    assert full.unavailable_tools() == set()
    scripted = build_research(tools_config, tmp_path, Players(LLMConfig(backend="scripted"), ROLES))
    assert scripted.unavailable_tools() == {"document_analyze", "image_caption", "image_generation"}


async def test_document_analyze_sends_the_document_and_the_task(
    tools_config: ToolsConfig, research_call: Callable[..., Call], workspace: Workspace, shared_data: Path, tmp_path: Path
) -> None:
    shutil.copy(shared_data / "edu_zh_thu-numerical-analysis-notes.pdf", workspace.root / "notes.pdf")
    with FakeOpenAIServer(lambda body: Reply("绝对误差是近似值与准确值之差。"), strict="vllm-glm") as srv:
        research = build_research(tools_config, tmp_path, Players(LLMConfig(base_url=srv.url, max_retries=0), ROLES))
        obs = await research_call(research=research)("document_analyze", task="什么是绝对误差？", document_path="notes.pdf")
    assert obs.text == "绝对误差是近似值与准确值之差。"
    (request,) = srv.requests
    prompt = _text_of(request)
    assert request["model"] == "reader" and "什么是绝对误差？" in prompt and "绝对误差" in prompt.split("<document>")[1]
    assert "Answer in Chinese" in prompt


async def test_image_caption_sends_the_image(
    tools_config: ToolsConfig, research_call: Callable[..., Call], workspace: Workspace, tmp_path: Path
) -> None:
    (workspace.root / "chart.png").write_bytes(_png((64, 48)))
    (workspace.root / "notes.txt").write_text("not an image")
    with FakeOpenAIServer(lambda body: Reply("A blue rectangle.\nAlt text: a plain blue image."), strict="vllm-glm") as srv:
        research = build_research(tools_config, tmp_path, Players(LLMConfig(base_url=srv.url, max_retries=0), ROLES))
        call = research_call(research=research)
        obs = await call("image_caption", image_path="chart.png")
        refused = await call("image_caption", image_path="notes.txt")
    assert obs.text.endswith("Alt text: a plain blue image.")
    assert refused.is_error and "not a readable image" in refused.text
    (request,) = srv.requests
    parts = request["messages"][-1]["content"]
    assert request["model"] == "looker" and any(
        p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,") for p in parts
    )


async def test_model_failures_and_missing_roles_are_error_observations(
    tools_config: ToolsConfig, research_call: Callable[..., Call], workspace: Workspace, tmp_path: Path
) -> None:
    (workspace.root / "notes.md").write_text("# Notes\nSome text.")
    off = await research_call()("document_analyze", task="summarise", document_path="notes.md")
    assert off.is_error and "not available" in off.text
    # permissive: the test answers every request with its own 400, whatever the request holds
    with FakeOpenAIServer(lambda body: ErrorReply(400, "bad request")) as srv:
        research = build_research(tools_config, tmp_path, Players(LLMConfig(base_url=srv.url, max_retries=0), ROLES))
        failed = await research_call(research=research)("document_analyze", task="summarise", document_path="notes.md")
    assert failed.is_error and "document_analyze on notes.md failed" in failed.text


async def test_image_generation_saves_the_decoded_image(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call], workspace: Workspace, monkeypatch
) -> None:
    monkeypatch.setenv("TEST_IMAGES_KEY", "key-images")
    server.on(
        "/v1/images/generations",
        ScriptedAnswer({"error": "busy"}, 429, {"Retry-After": "0"}),
        ScriptedAnswer({"created": 1, "data": [{"b64_json": base64.b64encode(_png((512, 256))).decode()}]}),
    )
    cfg = replace(tools_config, image_generation=ImageGenerationConfig(f"{server.url}/v1", "TEST_IMAGES_KEY", "painter"))
    obs = await research_call(cfg)("image_generation", prompt="a calm lake", width=512, height=256, path="assets/lake.png")
    assert obs.text == "Generated assets/lake.png (PNG, 512x256)."
    with Image.open(workspace.root / "assets/lake.png") as img:
        assert img.size == (512, 256)
    seen = server.seen("/v1/images/generations")[-1]
    assert seen.json() == {"model": "painter", "prompt": "a calm lake", "n": 1, "size": "512x256", "response_format": "b64_json"}
    assert seen.headers["Authorization"] == "Bearer key-images"


async def test_image_generation_rejects_answers_without_an_image(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on(
        "/v1/images/generations",
        ScriptedAnswer({"data": [{"url": "https://example.org/x.png"}]}),
        ScriptedAnswer({"data": [{"b64_json": "aGVsbG8="}]}),
    )
    call = research_call(replace(tools_config, image_generation=ImageGenerationConfig(f"{server.url}/v1")))
    assert "no b64_json image" in (await call("image_generation", prompt="p", width=256, height=256, path="a.png")).text
    assert "not an image" in (await call("image_generation", prompt="p", width=256, height=256, path="a.png")).text
