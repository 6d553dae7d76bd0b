"""The weak-model guards, each driven by a scripted model behind the fake OpenAI server (real HTTP, real client).

Each test checks the failure category, the turn the agent ended on, and the recovery
message the model saw one turn before."""

from __future__ import annotations

import itertools
from typing import Any

from agents.config import AgentConfig, GuardConfig
from agents.guards import NUDGE
from agents.loop import Agent
from agents.tools import ToolContext
from agents.tools.toolsets import toolset_for
from core.config import LLMConfig
from core.llm.client import ModelClient
from core.records import Trajectory
from fakes.openai_server import FakeOpenAIServer, Reply, replay

SYSTEM, USER = "You make slides.", "Make a one-slide deck about tides."
SLIDE = "<html><body><h1>Tides</h1></body></html>"
WRITE = ("write_file", {"path": "slides/slide_01.html", "content": SLIDE})
FINALIZE = ("finalize", {"outcome": "slides/"})


async def play(srv: FakeOpenAIServer, ctx: ToolContext, guards: GuardConfig | None = None, **llm: Any) -> Trajectory:
    client = ModelClient(LLMConfig(base_url=srv.url, model="fake", max_retries=0, **llm), "agent")
    try:
        config = AgentConfig(max_steps=30, guards=guards or GuardConfig())
        trajectory = await Agent(client, toolset_for(ctx.role), ctx, config, "t1").run(SYSTEM, USER)
    finally:
        await client.aclose()
    assert srv.refused == []  # the strict vllm-glm fake (LLMConfig's default profile) took every request
    return trajectory


def warnings(trajectory: Trajectory) -> list[str]:
    return [m.content for m in trajectory.messages if m.kind == "warning"]


def thoughts() -> Any:
    """A model that thinks aloud with a new thought each turn (no file written, no repetition)."""
    counter = itertools.count()
    return lambda _: Reply(tool_calls=[("thinking", {"thought": f"idea {next(counter)}"})])


async def test_a_model_that_never_calls_tools_ends_on_turn_3(ctx: ToolContext) -> None:
    with FakeOpenAIServer(replay([Reply("Sure! Here is a long answer about tides.")]), strict="vllm-glm") as srv:
        result = await play(srv, ctx)
    assert (result.status, result.failure, len(result.steps), len(srv.requests)) == ("failed", "agent/no_tool_calls", 3, 3)
    nudge, recovery = warnings(result)
    assert nudge == NUDGE
    assert "the next turn without one ends your work" in recovery and "write_file" in recovery and "finalize" in recovery
    assert srv.requests[2]["messages"][-1] == {"role": "user", "content": recovery}  # the model saw the recovery


async def test_the_recovery_instruction_can_work(ctx: ToolContext) -> None:
    talk = Reply("Let me think.")
    with FakeOpenAIServer(
        replay([talk, talk, Reply(tool_calls=[WRITE]), Reply(tool_calls=[FINALIZE])]), strict="vllm-glm"
    ) as srv:
        result = await play(srv, ctx)
    assert (result.status, len(result.steps), len(warnings(result))) == ("finalized", 4, 2)


async def test_a_model_that_repeats_one_call_ends_as_a_loop_on_turn_3(ctx: ToolContext) -> None:
    with FakeOpenAIServer(replay([Reply(tool_calls=[("list_directory", {"path": "."})])]), strict="vllm-glm") as srv:
        result = await play(srv, ctx)
    assert (result.failure, len(result.steps)) == ("agent/loop", 3)
    assert warnings(result) == [warnings(result)[0]] and "same call(s) 2 times and got the same result" in warnings(result)[0]
    assert [m.kind for m in result.messages[-2:]] == ["model", "tool"]  # the last turn is recorded whole


async def test_a_cycle_of_identical_turns_is_a_loop(ctx: ToolContext) -> None:
    turns = [Reply(tool_calls=[("list_directory", {"path": "."})]), Reply(tool_calls=[("todo_list", {})])]
    with FakeOpenAIServer(replay(turns * 10), strict="vllm-glm") as srv:
        result = await play(srv, ctx)
    assert (result.failure, len(result.steps)) == ("agent/loop", 6)  # the two-turn cycle seen three times


async def test_a_rambling_model_is_cut_and_ends_on_its_third_cut_turn(ctx: ToolContext) -> None:
    ramble = Reply(
        "and so on " * 50, tool_calls=[("thinking", {"thought": "more"})], finish_reason="length", completion_tokens=64
    )
    talk = itertools.count()
    with FakeOpenAIServer(
        lambda _: ramble if next(talk) != 1 else Reply(tool_calls=[("todo_list", {})]), strict="vllm-glm"
    ) as srv:
        result = await play(srv, ctx, max_tokens=64)
    # turn 1 cut, turn 2 fine (the count starts again), turns 3-5 cut: ends on turn 5
    assert (result.failure, len(result.steps)) == ("agent/rambling", 5)
    assert sum("Your reply was cut (at llm.max_tokens, 64 tokens)" in w for w in warnings(result)) == 3


async def test_turns_over_the_time_limit_are_cut_and_count_as_rambling(ctx: ToolContext) -> None:
    with FakeOpenAIServer(replay([Reply(tool_calls=[WRITE], delay_s=1.0)]), strict="vllm-glm") as srv:
        result = await play(srv, ctx, turn_timeout_s=0.2)
    assert (result.failure, len(result.steps)) == ("agent/rambling", 3)
    assert [s.error for s in result.steps] == ["model_error:turn_timeout"] * 3
    assert "no reply within the turn time limit" in warnings(result)[0]


async def test_a_model_that_stops_making_progress_after_writing_is_stalled(ctx: ToolContext) -> None:
    think = thoughts()
    with FakeOpenAIServer(
        lambda body: Reply(tool_calls=[WRITE]) if len(body["messages"]) == 2 else think(body), strict="vllm-glm"
    ) as srv:
        result = await play(srv, ctx, GuardConfig(stall_turns=4))
    # the write, then 4 + 1 turns without progress: the limit grows by one per slide written (a review pass)
    assert (result.failure, len(result.steps)) == ("agent/stalled", 6)
    assert [s.progress for s in result.steps] == [True] + [False] * 5
    assert "Your last 4 turns changed no file and returned nothing you had not seen before" in warnings(result)[-1]


async def test_thinking_alone_is_not_progress(ctx: ToolContext) -> None:
    with FakeOpenAIServer(thoughts(), strict="vllm-glm") as srv:
        result = await play(srv, ctx, GuardConfig(stall_turns=5))
    assert (result.failure, len(result.steps)) == ("agent/stalled", 5)


async def test_todo_churn_alone_is_not_progress(ctx: ToolContext) -> None:
    churn = itertools.cycle(
        [("todo_create", {"items": ["outline", "write"]}), ("todo_update", {"index": 1, "status": "done"}), ("todo_list", {})]
    )
    with FakeOpenAIServer(lambda _: Reply(tool_calls=[next(churn)]), strict="vllm-glm") as srv:
        result = await play(srv, ctx)
    assert (result.failure, len(result.steps)) == ("agent/stalled", GuardConfig().stall_turns)
    assert (ctx.workspace.root / "todo.json").is_file() and not any(s.progress for s in result.steps)


async def test_the_same_call_with_a_new_result_is_not_a_loop(ctx: ToolContext) -> None:
    count = ("execute_command", {"command": "echo line >> log.txt && wc -l < log.txt"})
    with FakeOpenAIServer(
        replay([Reply(tool_calls=[count])] * 5 + [Reply(tool_calls=[WRITE]), Reply(tool_calls=[FINALIZE])]), strict="vllm-glm"
    ) as srv:
        result = await play(srv, ctx)
    assert result.status == "finalized" and all(s.progress for s in result.steps[:6])


async def test_a_guard_at_zero_is_off(ctx: ToolContext) -> None:
    with FakeOpenAIServer(replay([Reply(tool_calls=[("list_directory", {"path": "."})])]), strict="vllm-glm") as srv:
        result = await play(srv, ctx, GuardConfig(repeated_call_turns=0, stall_turns=0))
    assert (result.failure, len(result.steps)) == ("environment/step_limit", 30)


async def test_the_context_budget_uses_the_window_the_server_states(ctx: ToolContext) -> None:
    with FakeOpenAIServer(thoughts(), max_model_len=2000, strict="vllm-glm") as srv:
        client = ModelClient(LLMConfig(base_url=srv.url, model="fake", max_retries=0), "agent")
        await client.list_models()
        assert client.context_window == 2000
        agent = Agent(client, toolset_for(ctx.role), ctx, AgentConfig(max_steps=4, context_window=50_000), "t1")
        assert agent.budget.window == 2000
        await client.aclose()
