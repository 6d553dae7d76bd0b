"""docs/extending.md, tested: each extension is one module plus one line, and flows through.

Every test adds a throwaway defect code, stage, tool or backend the way the doc says, and
checks it where users meet it (the gate's test is tests/filters/test_gate_extension.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Sequence

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from agents.sandbox import Workspace
from agents.tools import REGISTRY, ToolContext, tool
from agents.toolbox import toolset_for
from core.config import PROJECT_ROOT, LLMConfig, validate_common
from core.defects import DEFECT_CODES, DefectCode, Source
from core.llm_types import ChatResult
from core.models import BACKENDS, role_client
from core.records import Message, ToolCall, Usage
from core.run import RunContext
from critic.critic import Inspection, RulesCritic
from pipeline.config import validate
from pipeline.report.stage import make_report
from pipeline.stages import run_stages
from pipeline.synthesize import STAGES
from tests.pipeline.report_run import build_run


def synthesize_config(*overrides: str):
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
        return compose("synthesize", overrides=list(overrides))


def test_a_new_defect_code_reaches_the_critic_and_the_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(
        DEFECT_CODES, "glare", DefectCode("glare", Source.slide, "style", "minor", "a white box glares", "tone the box down")
    )
    measured = [{"code": "glare", "element": "div.box", "detail": "98% white"}]
    review = asyncio.run(RulesCritic().review(Inspection("inspect_slide", "slides/slide_01.html", "", measured), tmp_path, "en"))
    assert [(f.category, f.severity, f.fix) for f in review.findings] == [("style", "minor", "tone the box down")]

    build_run(tmp_path, rollouts=2)
    defects_file = next(tmp_path.glob("rollouts/*/deck_defects.json"))
    deck = json.loads(defects_file.read_text())
    deck["slides"][0]["defects"].append({"code": "glare", "severity": "minor", "element": "div.box"})
    defects_file.write_text(json.dumps(deck))
    make_report(tmp_path)
    assert "glare" in (tmp_path / "report" / "index.html").read_text()


def test_a_new_stage_runs_in_the_recipe_order(tmp_path: Path) -> None:
    def count_tasks(ctx: RunContext) -> dict[str, Any]:
        (ctx.store.path("stats")).mkdir(exist_ok=True)
        ctx.store.path("stats", "count.json").write_text(json.dumps({"tasks": 0}))
        return {"tasks": 0}

    recipe = {**STAGES, "count": count_tasks}
    cfg = synthesize_config(f"run.dir={tmp_path}", "tracking=disabled")
    run_stages(cfg, recipe, "synthesize", validate, ["count"])
    assert json.loads((tmp_path / "stats" / "count.json").read_text()) == {"tasks": 0}
    assert "stage count: {'tasks': 0}" in (tmp_path / "logs" / "synthesize.log").read_text()


def test_a_new_tool_is_offered_to_its_role_and_called_as_a_model_calls_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(REGISTRY, "tools", dict(REGISTRY.tools))
    monkeypatch.setattr(REGISTRY, "roles", {role: list(names) for role, names in REGISTRY.roles.items()})

    @tool("presenter")
    async def word_count(ctx: ToolContext, path: str) -> str:
        """Count the words of a workspace file."""
        return f"{path}: {len(ctx.workspace.read_bytes(path, 1 << 20).split())} words"

    (tmp_path / "notes.md").write_text("three small words")
    presenter = toolset_for("presenter")
    assert "word_count" in [s["function"]["name"] for s in presenter.schemas()]
    assert "word_count" not in toolset_for("researcher").tools
    call = ToolCall("call_1", "word_count", json.dumps({"path": "notes.md"}))
    observation = asyncio.run(presenter.call(ToolContext(Workspace(tmp_path), "presenter"), call))
    assert observation.text == "notes.md: 3 words" and not observation.is_error


class EchoEndpoint:
    """A throwaway backend: answers every turn with the last user message."""

    context_window = 4096
    profile = "openai"
    vision = False

    def __init__(self, cfg: LLMConfig, role: str) -> None:
        self.name = cfg.model

    async def chat(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None, image_root: Path | None = None
    ) -> ChatResult:
        last = next(m.content for m in reversed(messages) if m.role == "user")
        return ChatResult(content=last, reasoning=None, tool_calls=(), usage=Usage(len(messages), 1))

    async def list_models(self) -> list[str]:
        return [self.name]

    async def aclose(self) -> None:
        return None


def test_a_new_backend_is_selectable_by_llm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(BACKENDS, "echo", EchoEndpoint)
    configs = tmp_path / "configs"
    (configs / "llm").mkdir(parents=True)
    (configs / "llm" / "echo.yaml").write_text("backend: echo\nbase_url: none://echo\nmodel: echo-1\n")
    cfg = synthesize_config(f"hydra.searchpath=[file://{configs}]", "llm=echo")  # as on the command line
    validate_common(cfg)
    typed = OmegaConf.to_object(cfg)  # as an entry point's stages see it
    model = role_client(typed.llm, typed.roles, "agent")
    assert isinstance(model, EchoEndpoint) and model.name == "echo-1"
    reply = asyncio.run(model.chat([Message("user", "hello")]))
    assert reply.content == "hello"
