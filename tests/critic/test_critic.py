"""The isolated critic: what it sees, what it injects, and each mode."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from agents.config import AgentConfig, SandboxConfig
from agents.loop import Agent
from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.registry import Tool, Toolset
from agents.tools.toolsets import toolset_for
from core.config import LLMConfig
from core.defects import Defect, ManuscriptIssue
from core.llm.client import ModelClient
from core.records import ToolCall
from core.seams.review import Finding, Inspection, Review
from core.seams.steps import ManuscriptMeasured, ManuscriptReport, Measured, Observation, SlideMeasured, StepState
from critic.critic import CriticHook, ModelCritic, RulesCritic, make_critic_hook
from fakes.openai_server import FakeOpenAIServer, Reply

pytestmark = pytest.mark.usefixtures("close_model_clients")  # tests/conftest.py

SLIDE = '<html><body style="width:1280px;height:720px"><h1>Secret slide title</h1></body></html>'
DEFECTS = (Defect("overflow", "major", "h1", "right edge 1400px > 1280px"),)
AGENT_SECRET = "agent-history-marker-42"


def slide_data() -> SlideMeasured:
    return SlideMeasured("slides/slide_01.html", "renders/slide_01.png", "16:9", 1280, 720, DEFECTS)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "slides").mkdir()
    (tmp_path / "renders").mkdir()
    (tmp_path / "slides" / "slide_01.html").write_text(SLIDE)
    Image.new("RGB", (64, 36), "white").save(tmp_path / "renders" / "slide_01.png")
    return ToolContext(Workspace(tmp_path, SandboxConfig()), role="presenter")


def critic_reply(severity: str = "major") -> Reply:
    review = {
        "reasoning": "The title runs off the right edge; I should shrink it.",
        "findings": [{"category": "layout", "severity": severity, "evidence": "h1 past the right edge", "fix": "font-size 48px"}],
    }
    return Reply(json.dumps(review))


def state(ctx: ToolContext, data: Measured | None, tool: str = "inspect_slide") -> StepState:
    call = ToolCall("c1", tool, json.dumps({"html_file": "slides/slide_01.html"}))
    return StepState(
        3, (call,), (Observation("overflow (major) h1: ...", ("renders/slide_01.png",), measured=data),), ctx.workspace.root
    )


async def test_critic_request_holds_only_the_observation_and_artifact(ctx: ToolContext) -> None:
    with FakeOpenAIServer(lambda _: critic_reply(), strict="vllm-glm") as srv:
        model = ModelClient(LLMConfig(base_url=srv.url, model="critic-vlm"), "critic")
        hook = CriticHook(ModelCritic(model), "major", "en")
        injections = await hook.after_step(state(ctx, slide_data()))
        (request,) = srv.requests
    (message,) = request["messages"]  # one fresh user message: no system prompt of the agent, no history
    assert message["role"] == "user" and "tools" not in request
    text = message["content"][0]["text"]
    assert "Secret slide title" in text and "right edge 1400px" in text and AGENT_SECRET not in json.dumps(request)
    assert message["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    (injection,) = injections
    assert (
        injection.critic_model == "critic-vlm"
        and injection.observation_ref == "inspect_slide:slides/slide_01.html:renders/slide_01.png"
    )
    assert "shrink it" in injection.thought and "[layout/major]" in injection.thought
    assert json.loads(injection.findings_json)[0]["category"] == "layout"
    assert hook.findings == {"layout": 1}


async def test_findings_below_the_threshold_are_counted_not_injected(ctx: ToolContext) -> None:
    with FakeOpenAIServer(lambda _: critic_reply("minor"), strict="vllm-glm") as srv:
        hook = CriticHook(ModelCritic(ModelClient(LLMConfig(base_url=srv.url, model="c"), "critic")), "major", "en")
        assert await hook.after_step(state(ctx, slide_data())) == []
    assert hook.findings == {"layout": 1}


async def test_a_broken_critic_never_breaks_the_rollout(ctx: ToolContext) -> None:
    with FakeOpenAIServer(lambda _: Reply("I refuse to answer in JSON"), strict="vllm-glm") as srv:
        hook = CriticHook(
            ModelCritic(ModelClient(LLMConfig(base_url=srv.url, model="c", backoff_base_s=0.01), "critic")), "major", "en"
        )
        assert await hook.after_step(state(ctx, slide_data())) == []
    assert hook.errors == 1 and srv.refused == []  # the reply was the error, not a refused request


async def test_inspections_of_one_turn_are_reviewed_concurrently_and_injected_in_order(ctx: ToolContext) -> None:
    (ctx.workspace.root / "slides" / "slide_02.html").write_text(SLIDE)
    started: list[str] = []
    everyone_started = asyncio.Event()

    class WaitingCritic:  # each review waits until every review of the turn has begun
        name = "waiting"

        async def review(self, inspection: Inspection, workspace: Path, language: str) -> Review:
            started.append(inspection.artifact)
            if len(started) == 2:
                everyone_started.set()
            await asyncio.wait_for(everyone_started.wait(), 5)
            return Review(findings=[Finding(category="layout", severity="major", evidence=inspection.artifact, fix="shrink")])

    calls = tuple(ToolCall(f"c{n}", "inspect_slide", json.dumps({"html_file": f"slides/slide_0{n}.html"})) for n in (1, 2))
    observations = tuple(
        Observation("measured", measured=replace(slide_data(), artifact=f"slides/slide_0{n}.html")) for n in (1, 2)
    )
    injections = await CriticHook(WaitingCritic(), "major", "en").after_step(
        StepState(0, calls, observations, ctx.workspace.root)
    )
    assert [json.loads(i.findings_json)[0]["evidence"] for i in injections] == ["slides/slide_01.html", "slides/slide_02.html"]


async def test_rules_mode_uses_measured_defects_only(ctx: ToolContext) -> None:
    hook = make_critic_hook("rules", None, "major", "zh")
    (injection,) = await hook.after_step(state(ctx, slide_data()))
    assert injection.critic_model == "rules" and "[layout/major] overflow at h1" in injection.thought
    assert "检查" in injection.thought  # reasoning in the task's language
    clean = replace(slide_data(), defects=())
    assert await hook.after_step(state(ctx, clean)) == []


async def test_manuscript_inspections_are_reviewed_too(ctx: ToolContext) -> None:
    (ctx.workspace.root / "manuscript.md").write_text("# One\n\n---\n\n![chart](assets/none.png)\n")
    issue = ManuscriptIssue("missing_asset", 2, "assets/none.png")
    data = ManuscriptMeasured("manuscript.md", ManuscriptReport(2, "en", (issue,)), "none")
    (injection,) = await rules_hook().after_step(state(ctx, data, tool="inspect_manuscript"))
    assert json.loads(injection.findings_json)[0]["category"] == "integrity"


def rules_hook() -> CriticHook:
    return CriticHook(RulesCritic(), "major", "en")


def test_self_mode_has_no_critic() -> None:
    assert make_critic_hook("none", None, "major", "en") is None
    with pytest.raises(ValueError, match="critic role played"):
        make_critic_hook("extrinsic", None, "major", "en")


async def fake_inspect(ctx: ToolContext, html_file: str) -> Observation:
    """Stand-in for the renderer-backed inspect_slide: the measured result of a slide."""
    return Observation("overflow (major) h1", ("renders/slide_01.png",), measured=slide_data())


async def test_injection_sits_before_the_next_model_turn(ctx: ToolContext) -> None:
    seen: list[list[dict]] = []

    def agent(body: dict) -> Reply:
        seen.append(body["messages"])
        if len(seen) == 1:
            return Reply("", [("inspect_slide", {"html_file": "slides/slide_01.html"})])
        return Reply("", [("finalize", {"outcome": "slides"})])

    inspect = Tool.from_function(fake_inspect)
    tools = Toolset({**toolset_for("presenter").tools, "inspect_slide": inspect})
    with FakeOpenAIServer(agent, strict="vllm-glm") as srv:
        model = ModelClient(LLMConfig(base_url=srv.url, model="agent"), "agent")
        trajectory = await Agent(model, tools, ctx, AgentConfig(), "t1", hooks=[rules_hook()]).run(
            "sys " + AGENT_SECRET, "make slides"
        )
    roles = [(m["role"], (m.get("tool_calls") or [{}])[0].get("function", {}).get("name")) for m in seen[1]]
    # the inspection's result (its image follows as a user message, vLLM style), then the critic's thinking call
    assert roles[-4:] == [("tool", None), ("user", None), ("assistant", "thinking"), ("tool", None)]
    (injection,) = trajectory.injections
    injected = trajectory.messages[injection.message_index]
    assert injected.kind == "critic" and injected.tool_calls[0].name == "thinking"
    assert trajectory.messages[injection.message_index + 1].kind == "critic"
    assert trajectory.messages[injection.message_index - 1].name == "inspect_slide"
    assert trajectory.status == "finalized" and srv.refused == []
