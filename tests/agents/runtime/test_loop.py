"""The agent loop driven by the fake OpenAI server through the real model client and tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from PIL import Image

from agents.config import AgentConfig
from agents.guards import NUDGE
from agents.loop import Agent
from agents.tools import Tool, ToolContext, Toolset
from agents.tools.toolsets import toolset_for
from core.config import LLMConfig, PriceConfig
from core.llm.client import ModelClient
from core.records import Trajectory
from core.run.metering import Unit, unit_scope
from core.seams.steps import Injection, StepState
from fakes.model import last_tool_text
from fakes.openai_server import ErrorReply, FakeOpenAIServer, FaultPlan, Reply, replay

pytestmark = pytest.mark.usefixtures("close_model_clients")  # tests/conftest.py

SYSTEM, USER = "You make slides.", "Make a two-slide deck about tides."
SLIDE = "<html><body><h1>Tides</h1></body></html>"


def model(srv: FakeOpenAIServer, **overrides: Any) -> ModelClient:
    settings = {"timeout_s": 5.0, "max_retries": 0} | overrides
    return ModelClient(LLMConfig(base_url=srv.url, model="fake", api_key_env="FAKE_KEY", **settings), "agent")


def agent(
    srv: FakeOpenAIServer, ctx: ToolContext, tools: Toolset | None = None, saves: list | None = None, **config: Any
) -> Agent:
    save = saves.append if saves is not None else None
    return Agent(model(srv), tools or toolset_for(ctx.role), ctx, AgentConfig(**config), "t1", save=save)


FINALIZE = ("finalize", {"outcome": "slides/"})
WRITE_SLIDE = ("write_file", {"path": "slides/slide_01.html", "content": SLIDE})


async def test_multi_tool_turn_runs_calls_concurrently_in_order(ctx: ToolContext) -> None:
    async def nap(ctx: ToolContext, label: str) -> str:
        """Sleep, then say the label."""
        await asyncio.sleep(0.3)
        return label

    tools = Toolset.of([*toolset_for("presenter").tools.values(), Tool.from_function(nap)])
    turn: list[tuple[str, dict | str]] = [
        ("nap", {"label": "first"}),
        ("nap", {"label": "second"}),
        WRITE_SLIDE,
        ("nap", {"label": "fourth"}),
    ]
    with FakeOpenAIServer(replay([Reply(tool_calls=turn), Reply(tool_calls=[FINALIZE])]), strict="vllm-glm") as srv:
        result = await agent(srv, ctx, tools, max_tool_calls_per_turn=3).run(SYSTEM, USER)
    assert (result.status, result.outcome, len(result.steps)) == ("finalized", "slides/", 2)
    step = result.steps[0]
    assert step.tool_names == ("nap", "nap", "write_file", "nap") and step.tools_s < 0.55
    tool_msgs = [m for m in result.messages if m.role == "tool"][:4]
    assert [m.tool_call_id for m in tool_msgs] == [c.id for c in result.messages[2].tool_calls]
    assert [m.content for m in tool_msgs[:3]] == ["first", "second", "Wrote 40 bytes to slides/slide_01.html."]
    assert tool_msgs[3].content.startswith("Error: Not run: at most 3 tool calls")
    assert [m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"][:2] == ["first", "second"]


async def test_bad_argument_is_read_and_fixed_by_the_model(ctx: ToolContext) -> None:
    def policy(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 2:
            return Reply(tool_calls=[("write_file", {"path": "slides/slide_01.html", "contents": SLIDE})])
        feedback = last_tool_text(body)
        if "content: Field required" in feedback and "contents: Extra inputs" in feedback:
            return Reply(tool_calls=[WRITE_SLIDE])
        return Reply(tool_calls=[FINALIZE])

    with FakeOpenAIServer(policy, strict="vllm-glm") as srv:
        result = await agent(srv, ctx).run(SYSTEM, USER)
    assert result.status == "finalized" and len(result.steps) == 3
    assert result.messages[3].content.startswith("Error: Invalid arguments for write_file")
    assert (ctx.workspace.root / "slides/slide_01.html").read_text() == SLIDE


async def test_a_malformed_tool_call_is_an_observation_and_the_history_stays_parsable(ctx: ToolContext) -> None:
    """vLLM parses every earlier call's arguments: the strict vllm-glm fake refuses a history that does not parse."""
    replies = replay([Reply(tool_calls=[WRITE_SLIDE]), Reply(tool_calls=[WRITE_SLIDE]), Reply(tool_calls=[FINALIZE])])
    with FakeOpenAIServer(replies, faults=FaultPlan(script=["malformed_tool_json"]), strict="vllm-glm") as srv:
        result = await agent(srv, ctx).run(SYSTEM, USER)
    assert "not valid JSON" in result.messages[3].content and (result.status, len(result.steps)) == ("finalized", 3)
    assert srv.refused == [] and len(srv.requests) == 3
    assert srv.requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"  # sent as an empty object
    assert result.messages[2].tool_calls[0].arguments.startswith('{"path"')  # the record keeps what the model wrote


async def test_context_warnings_at_half_and_four_fifths(ctx: ToolContext) -> None:
    tokens = iter([100, 300, 520, 700, 810, 900, 950])
    with FakeOpenAIServer(
        lambda _: Reply(
            prompt_tokens=(n := next(tokens)), tool_calls=[("thinking", {"thought": f"go on {n}"})], completion_tokens=0
        ),
        strict="vllm-glm",
    ) as srv:
        result = await agent(srv, ctx, context_window=1000, max_steps=7).run(SYSTEM, USER)
    tool_texts = [m.content for m in result.messages if m.role == "tool"]
    warned = [i for i, text in enumerate(tool_texts) if "[context warning]" in text]
    assert warned == [2, 4]
    assert "520 of the 1,000 context tokens are used (52%); about 480 remain" in tool_texts[2]
    assert "81%" in tool_texts[4] and "Wrap up" in tool_texts[4]
    assert "[context warning]" in last_tool_text(srv.requests[3])  # the model saw it
    assert result.failure == "environment/step_limit"


async def test_context_overflow_ends_the_agent(ctx: ToolContext) -> None:
    tokens = iter([600, 1100])
    with FakeOpenAIServer(
        lambda _: Reply(tool_calls=[("thinking", {"thought": "more"})], prompt_tokens=next(tokens)), strict="vllm-glm"
    ) as srv:
        result = await agent(srv, ctx, context_window=1000).run(SYSTEM, USER)
    assert (result.status, result.failure, len(result.steps), len(srv.requests)) == ("failed", "agent/context_overflow", 2, 2)


async def test_an_oversized_prompt_overflows_before_any_request(ctx: ToolContext) -> None:
    with FakeOpenAIServer(replay([Reply(tool_calls=[FINALIZE])]), strict="vllm-glm") as srv:
        result = await agent(srv, ctx, context_window=1000).run("x" * 4100, USER)
    assert result.failure == "agent/context_overflow" and srv.requests == []


@pytest.mark.parametrize(
    "wording",
    [
        "This model's maximum context length is 8192 tokens.",
        "The decoder prompt (length 70000) is longer than the maximum model length of 65536. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",  # vLLM, with images
    ],
)
async def test_server_context_length_error_is_an_overflow(ctx: ToolContext, wording: str) -> None:
    error = ErrorReply(400, wording)
    with FakeOpenAIServer(lambda _: error) as srv:  # permissive: the test answers with the provider's refusal itself
        result = await agent(srv, ctx).run(SYSTEM, USER)
    assert result.failure == "agent/context_overflow" and result.steps[0].error == "model_error:context_length"


async def test_model_errors_end_the_agent_with_their_kind(ctx: ToolContext) -> None:
    with FakeOpenAIServer(replay([Reply()]), faults=FaultPlan(script=["500"]), strict="vllm-glm") as srv:
        result = await agent(srv, ctx).run(SYSTEM, USER)
    assert result.failure == "environment/model_error:server" and result.status == "failed"


async def test_step_token_and_time_limits(ctx: ToolContext) -> None:
    turns = iter(range(1000))

    def think(_: Any) -> Reply:  # a new thought each turn: the same call three times in a row is a loop
        return Reply(tool_calls=[("thinking", {"thought": f"hmm {next(turns)}"})], prompt_tokens=100, completion_tokens=50)

    with FakeOpenAIServer(think, strict="vllm-glm") as srv:
        assert (await agent(srv, ctx, max_steps=3).run(SYSTEM, USER)).failure == "environment/step_limit"
        assert len(srv.requests) == 3
        result = await agent(srv, ctx, max_total_tokens=400).run(SYSTEM, USER)
        assert result.failure == "environment/token_limit" and len(result.steps) == 3
    with FakeOpenAIServer(think, latency_s=0.15, strict="vllm-glm") as srv:
        result = await agent(srv, ctx, max_wall_s=0.2).run(SYSTEM, USER)
        assert result.failure == "environment/timeout" and 1 <= len(result.steps) <= 2


async def test_no_tool_call_gets_a_nudge(ctx: ToolContext) -> None:
    with FakeOpenAIServer(
        replay([Reply("I am done."), Reply(tool_calls=[WRITE_SLIDE]), Reply(tool_calls=[FINALIZE])]), strict="vllm-glm"
    ) as srv:
        result = await agent(srv, ctx).run(SYSTEM, USER)
    assert (result.messages[3].role, result.messages[3].kind, result.messages[3].content) == ("user", "warning", NUDGE)
    assert srv.requests[1]["messages"][-1] == {"role": "user", "content": NUDGE}
    assert (result.status, len(result.steps)) == ("finalized", 3)


async def test_finalize_refused_then_accepted(ctx: ToolContext) -> None:
    saves: list[Trajectory] = []
    with FakeOpenAIServer(
        replay([Reply(tool_calls=[FINALIZE]), Reply(tool_calls=[WRITE_SLIDE]), Reply(tool_calls=[FINALIZE])]), strict="vllm-glm"
    ) as srv:
        result = await agent(srv, ctx, saves=saves, save_interval_s=0).run(SYSTEM, USER)
    assert "does not exist" in result.messages[3].content and result.messages[3].content.startswith("Error:")
    assert (result.status, result.outcome, len(result.steps)) == ("finalized", "slides/", 3)
    assert [t.status for t in saves] == ["running", "running", "finalized"]
    assert [len(t.steps) for t in saves] == [1, 2, 3]
    assert Trajectory.from_json(saves[-1].to_json()) == result
    assert json.loads(result.tools_json) == toolset_for("presenter").schemas()


async def test_running_checkpoints_are_spaced_out_and_the_final_save_always_happens(ctx: ToolContext) -> None:
    saves: list[Trajectory] = []
    turns = replay(
        [Reply(tool_calls=[("thinking", {"thought": "plan"})]), Reply(tool_calls=[WRITE_SLIDE]), Reply(tool_calls=[FINALIZE])]
    )
    with FakeOpenAIServer(turns, strict="vllm-glm") as srv:
        result = await agent(srv, ctx, saves=saves, save_interval_s=3600).run(SYSTEM, USER)
    assert [(t.status, len(t.steps)) for t in saves] == [("running", 1), ("finalized", 3)]
    assert saves[-1] == result


async def test_images_reach_the_model_from_the_workspace(ctx: ToolContext) -> None:
    (ctx.workspace.root / "renders").mkdir()
    Image.new("RGB", (32, 18), "white").save(ctx.workspace.root / "renders/slide_01.png")
    look = Reply(tool_calls=[("read_file", {"path": "renders/slide_01.png"}), WRITE_SLIDE])
    with FakeOpenAIServer(replay([look, Reply(tool_calls=[FINALIZE])]), strict="vllm-glm") as srv:
        result = await agent(srv, ctx).run(SYSTEM, USER)
    assert result.messages[3].images == ("renders/slide_01.png",) and result.status == "finalized"
    parts = srv.requests[1]["messages"][-1]["content"]
    assert any(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,") for p in parts)


class Critic:
    """A test critic: after an inspect_* observation it reviews it in a fresh context (here: a fixed finding)."""

    def __init__(self) -> None:
        self.seen: list[StepState] = []

    async def after_step(self, state: StepState) -> list[Injection]:
        self.seen.append(state)
        return [
            Injection(
                "The title overflows the slide; shrink it.",
                "critic-model",
                json.dumps({"defects": ["overflow"]}),
                f"{c.name}:slide_01",
            )
            for c, obs in zip(state.calls, state.observations)
            if c.name.startswith("inspect_") and not obs.is_error
        ]


async def test_hook_injects_a_thinking_call_recorded_as_critic(ctx: ToolContext) -> None:
    async def inspect_slide(ctx: ToolContext, path: str) -> str:
        """Render a slide."""
        return f"rendered {path}"

    tools = Toolset.of([*toolset_for("presenter").tools.values(), Tool.from_function(inspect_slide)])
    turns = replay(
        [
            Reply(tool_calls=[WRITE_SLIDE]),
            Reply(tool_calls=[("inspect_slide", {"path": "slides/slide_01.html"})]),
            Reply(tool_calls=[FINALIZE]),
        ]
    )
    critic, saves = Critic(), list[Trajectory]()
    with FakeOpenAIServer(turns, strict="vllm-glm") as srv:
        runner = Agent(model(srv), tools, ctx, AgentConfig(), "t1", hooks=[critic], save=saves.append)
        result = await runner.run(SYSTEM, USER)
    assert len(critic.seen) == 2 and critic.seen[1].observations[0].text == "rendered slides/slide_01.html"
    (injection,) = result.injections
    assert (injection.step, injection.critic_model, injection.observation_ref) == (1, "critic-model", "inspect_slide:slide_01")
    call_msg, result_msg = result.messages[injection.message_index : injection.message_index + 2]
    assert call_msg.role == "assistant" and call_msg.kind == "critic" and call_msg.tool_calls[0].name == "thinking"
    assert json.loads(call_msg.tool_calls[0].arguments) == {"thought": "The title overflows the slide; shrink it."}
    assert (result_msg.role, result_msg.kind, result_msg.tool_call_id) == ("tool", "critic", call_msg.tool_calls[0].id)
    assert result.messages[injection.message_index - 1].name == "inspect_slide"
    wire = srv.requests[2]["messages"]
    assert wire[-2]["tool_calls"][0]["function"]["name"] == "thinking" and wire[-1]["content"].startswith("The title overflows")
    assert saves[1].injections == result.injections  # saved with the step


async def test_a_crash_leaves_a_readable_partial_record(ctx: ToolContext) -> None:
    class Broken:
        async def after_step(self, state: StepState) -> list[Injection]:
            raise RuntimeError("critic exploded")

    saves: list[Trajectory] = []
    with FakeOpenAIServer(replay([Reply(tool_calls=[WRITE_SLIDE])]), strict="vllm-glm") as srv:
        runner = Agent(model(srv), toolset_for("presenter"), ctx, AgentConfig(), "t1", hooks=[Broken()], save=saves.append)
        with pytest.raises(RuntimeError, match="critic exploded"):
            await runner.run(SYSTEM, USER)
    (partial,) = saves
    assert Trajectory.from_json(partial.to_json()) == partial
    assert (partial.status, partial.failure, len(partial.steps)) == ("failed", "environment/crash", 1)


async def test_a_tool_that_raises_type_error_ends_the_agent_as_tool_crash(ctx: ToolContext) -> None:
    async def measure(ctx: ToolContext, text: str) -> str:
        """Measure a text."""
        return len(text) + " characters"  # type: ignore[operator]  # the planted bug: TypeError

    tools = Toolset.of([*toolset_for("presenter").tools.values(), Tool.from_function(measure, "presenter")])
    turn = Reply(tool_calls=[WRITE_SLIDE, ("measure", {"text": "tides"})])
    with FakeOpenAIServer(replay([turn]), strict="vllm-glm") as srv:
        result = await agent(srv, ctx, tools).run(SYSTEM, USER)
    assert (result.status, result.failure, len(srv.requests)) == ("failed", "environment/tool_crash:measure", 1)
    assert result.steps[-1].error == "tool_crash:measure"
    assert (ctx.workspace.root / "slides/slide_01.html").is_file()  # the turn's other call ran to its end
    assert not any(m.kind == "tool" for m in result.messages)  # no result of the crashed turn, no stack trace


async def test_a_rollout_at_its_cost_cap_ends_as_agent_budget(ctx: ToolContext) -> None:
    """rollouts.max_cost_usd: the unit's next model call is refused, and the agent ends with its own category."""
    priced = PriceConfig(input_per_mtok=1000.0, output_per_mtok=0.0)  # $1 per 1,000 prompt tokens
    turns = [
        Reply(tool_calls=[("write_file", {"path": f"slides/slide_0{n}.html", "content": SLIDE})], prompt_tokens=1000)
        for n in range(1, 6)
    ]
    with FakeOpenAIServer(replay(turns), strict="vllm-glm") as srv:
        unit, client = Unit(max_cost_usd=2.5), model(srv, price=priced)
        with unit_scope(unit):
            result = await Agent(client, toolset_for(ctx.role), ctx, AgentConfig(), "t1").run(SYSTEM, USER)
        await client.aclose()
        assert len(srv.requests) == 3  # $3 spent: the call that crosses the cap completes, the next is not made
    assert (result.status, result.failure) == ("failed", "agent/budget")
    assert unit.usage()["agent"].cost == pytest.approx(3.0) and unit.usage()["agent"].failures == {"budget": 1}
