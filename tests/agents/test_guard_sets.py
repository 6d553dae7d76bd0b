"""The guards on two sets of scripted models behind the fake OpenAI server (real HTTP, real client, real tools).

The diligent set does what a capable model does (long research before its first write, re-reading a
source, writing every slide and then inspecting and revising each, retrying a fetch that timed out,
long reasoning): at default guard settings none of it may be ended by a guard. The degenerate set
(prose, identical calls with identical results, the same file written again, todo churn, rambling, the same
search reworded) must
end with its own category within (limit + 2) turns of its last progress, as `Step.progress` records it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Generator, Sequence

import pytest

from agents.config import AgentConfig, GuardConfig, SandboxConfig, ToolsConfig
from agents.loop import Agent
from agents.research.runtime import RESOURCE_KEY, build_research
from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.inspect import ASPECT, RENDERER
from agents.tools.toolsets import toolset_for
from core.config import LLMConfig
from core.llm.client import ModelClient
from core.records import Trajectory
from fakes.http_server import ScriptedAnswer, ScriptedServer
from fakes.model import last_tool_text
from fakes.openai_server import FakeOpenAIServer, Reply
from render.renderer import Renderer
from tests.rendered import session_loop

Call = tuple[str, dict[str, Any]]
Script = Generator["Call | Reply", dict[str, Any], None]
DEFAULTS = GuardConfig()
TOPICS = (
    "attention mechanism",
    "recurrent neural networks",
    "residual learning",
    "batch normalization",
    "BERT pre-training",
    "masked language model",
    "neural machine translation alignment",
    "reinforcement learning from human feedback",
    "reward model",
    "probability distributions",
    "conditional probability",
    "supervised learning",
    "gradient descent",
    "logistic regression",
    "recursion",
    "divide and conquer",
    "Fourier transform",
    "frequency response",
    "numerical error",
    "interpolation",
    "image recognition depth",
    "encoder decoder",
    "fine-tuning language models",
    "sorting algorithms",
    "Bayes rule",
)


def acting(script: Callable[[], Script]) -> Callable[[dict[str, Any]], Reply]:
    """A model playing `script`: it yields each turn's call (or whole Reply) and is sent the next request's body."""
    turns = script()
    first = True

    def policy(body: dict[str, Any]) -> Reply:
        nonlocal first
        turn = next(turns) if first else turns.send(body)
        first = False
        return turn if isinstance(turn, Reply) else Reply(tool_calls=[turn])

    return policy


async def play(
    policy: Callable[[dict[str, Any]], Reply], ctx: ToolContext, guards: GuardConfig = DEFAULTS, **llm: Any
) -> Trajectory:
    with FakeOpenAIServer(policy, strict="vllm-glm") as srv:
        client = ModelClient(LLMConfig(base_url=srv.url, model="fake", max_retries=0, **llm), "agent")
        try:
            # room for long work: what is tested is the guards, not the context budget (60 slide images overflow 50K)
            config = AgentConfig(max_steps=200, context_window=1_000_000, guards=guards)
            agent = Agent(client, toolset_for(ctx.role), ctx, config, "t1")
            trajectory = await agent.run("You make slides.", "Make a deck.")
        finally:
            await client.aclose()
        assert srv.refused == []
    return trajectory


def turns_since_progress(trajectory: Trajectory) -> int:
    progressed = [s.index for s in trajectory.steps if s.progress]
    return len(trajectory.steps) - 1 - progressed[-1] if progressed else len(trajectory.steps)


@pytest.fixture
def researcher(tools_config: ToolsConfig, tmp_path: Path) -> Callable[..., ToolContext]:
    def make(cfg: ToolsConfig = tools_config) -> ToolContext:
        (root := tmp_path / "researcher").mkdir()
        return ToolContext(Workspace(root, cfg.sandbox), "researcher", {RESOURCE_KEY: build_research(cfg, tmp_path)})

    return make


@pytest.fixture
def presenter(renderer: Renderer, tmp_path: Path) -> ToolContext:
    (root := tmp_path / "presenter").mkdir()
    return ToolContext(Workspace(root, SandboxConfig()), "presenter", {RENDERER: renderer, ASPECT: "16:9"})


def manuscript(notes: Sequence[str]) -> Call:
    text = "# Notes\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    return "write_file", {"path": "manuscript.md", "content": text}


FINALIZE_MANUSCRIPT: Call = ("finalize", {"outcome": "manuscript.md"})


def slide(n: int, version: int = 1) -> Call:
    html = f"<html><body style='margin:0;width:1280px;height:720px'><h1>Point {n}</h1><p>Draft {version} of point {n}.</p></body></html>"
    return "write_file", {"path": f"slides/slide_{n:02d}.html", "content": html}


def inspect(n: int) -> Call:
    return "inspect_slide", {"html_file": f"slides/slide_{n:02d}.html"}


# ---------------------------------------------------------------- the diligent set


async def test_a_researcher_with_25_lookups_before_its_first_write_finishes(researcher: Callable[..., ToolContext]) -> None:
    def script() -> Script:
        for topic in TOPICS:
            yield "search_web", {"query": topic}
        yield manuscript(TOPICS)
        yield FINALIZE_MANUSCRIPT

    result = await play(acting(script), researcher())
    assert (result.status, len(result.steps)) == ("finalized", 27), result.failure
    assert sum(s.progress for s in result.steps[:25]) >= 20  # most lookups found something new


async def test_a_researcher_that_rereads_a_source_after_writing_finishes(researcher: Callable[..., ToolContext]) -> None:
    def script() -> Script:
        body = yield "search_web", {"query": "attention mechanism"}
        source = next(w for w in last_tool_text(body).split() if w.startswith("corpus://"))
        yield "fetch_url", {"url": source}
        yield manuscript(["Attention weighs every token against every other."])
        body = yield "fetch_url", {"url": source}  # the same page again: nothing new, and fine
        yield "read_file", {"path": "manuscript.md"}
        yield manuscript(["Attention weighs every token against every other.", "Eight heads run in parallel."])
        yield FINALIZE_MANUSCRIPT

    result = await play(acting(script), researcher())
    assert result.status == "finalized", result.failure
    assert [s.progress for s in result.steps] == [True, True, True, False, True, True, False]  # finalize is not progress


@pytest.mark.parametrize("slides", [10, 20])
@session_loop
async def test_a_presenter_that_writes_every_slide_then_inspects_and_revises_each_finishes(
    presenter: ToolContext, slides: int
) -> None:
    numbers = range(1, slides + 1)

    def script() -> Script:
        yield from (slide(n) for n in numbers)
        yield from (inspect(n) for n in numbers)
        for n in numbers[: slides // 2]:  # revise half of them, each checked again
            yield slide(n, version=2)
            yield inspect(n)
        yield from (inspect(n) for n in numbers)  # a last review pass: mostly unchanged slides
        yield "finalize", {"outcome": "slides/"}

    result = await play(acting(script), presenter)
    assert (result.status, len(result.steps)) == ("finalized", 3 * slides + 2 * (slides // 2) + 1), result.failure


async def test_a_fetch_that_times_out_twice_then_succeeds_is_not_a_loop(
    researcher: Callable[..., ToolContext], tools_config: ToolsConfig
) -> None:
    page = "<html><body><article><h1>Tides</h1><p>The moon's gravity raises two bulges of water.</p></article></body></html>"
    sandbox = SandboxConfig(allow_private_addresses=True, call_timeout_s=0.5)  # a fetch stopped after 0.5 s
    cfg = replace(tools_config, fetch_backend="web", sandbox=sandbox)
    async with ScriptedServer() as server:
        slow = ScriptedAnswer(page, content_type="text/html", delay_s=1.5)
        server.on("/tides", slow, slow, ScriptedAnswer(page, content_type="text/html"))

        def script() -> Script:
            for _ in range(3):
                yield "fetch_url", {"url": f"{server.url}/tides"}
            yield manuscript(["The moon raises two bulges of water."])
            yield FINALIZE_MANUSCRIPT

        result = await play(acting(script), researcher(cfg))
    assert result.status == "finalized", result.failure
    timeouts = [m.content for m in result.messages if m.kind == "tool"][:2]
    assert all("did not finish within 0.5 s" in t for t in timeouts) and timeouts[0] == timeouts[1]
    warned = [m.content for m in result.messages if m.kind == "warning"]
    assert len(warned) == 1 and "same call(s) 2 times and got the same result" in warned[0]  # true: the same error


@session_loop
async def test_long_reasoning_turns_under_max_tokens_are_not_rambling(presenter: ToolContext) -> None:
    thinking = "Let me weigh the layout, the order of the points and the audience once more. " * 60

    def script() -> Script:
        for n in (1, 2, 3):
            yield Reply(reasoning=thinking, tool_calls=[slide(n)], completion_tokens=1000)
            yield Reply(reasoning=thinking, tool_calls=[inspect(n)], completion_tokens=1000)
        yield "finalize", {"outcome": "slides/"}

    result = await play(acting(script), presenter, max_tokens=1024)
    assert (result.status, len(result.steps)) == ("finalized", 7), result.failure


# ---------------------------------------------------------------- the degenerate set


def repeat(*turns: Call | Reply) -> Callable[[], Script]:
    def script() -> Script:
        for turn in itertools.cycle(turns):
            yield turn

    return script


def todo_churn() -> Script:
    for n in itertools.count():
        yield "todo_create", {"items": [f"plan the deck, version {n}", "write the slides"]}
        yield "todo_update", {"index": 1, "status": "in_progress"}
        yield "todo_list", {}


def reworded_search() -> Script:
    for mark in itertools.cycle(("", "?", "!", ".", " please", " again")):
        yield "search_web", {"query": f"attention mechanism{mark}"}


RAMBLE = Reply("and so on " * 50, tool_calls=[("thinking", {"thought": "more"})], finish_reason="length", completion_tokens=64)


@pytest.mark.parametrize(
    ("script", "failure", "limit"),
    [
        (repeat(Reply("Sure! Here is a long answer about tides.")), "agent/no_tool_calls", DEFAULTS.no_tool_call_turns),
        (repeat(("list_directory", {"path": "."})), "agent/loop", DEFAULTS.repeated_call_turns),
        (repeat(manuscript(["The same note."])), "agent/loop", DEFAULTS.repeated_call_turns),  # the same bytes again
        (todo_churn, "agent/stalled", DEFAULTS.stall_turns),
        (repeat(RAMBLE), "agent/rambling", DEFAULTS.cut_turns),
        (reworded_search, "agent/stalled", DEFAULTS.stall_turns),
    ],
    ids=["prose", "identical-calls", "identical-writes", "todo-churn", "rambling", "reworded-search"],
)
async def test_a_degenerate_model_ends_within_two_turns_of_its_guard_limit(
    researcher: Callable[..., ToolContext], script: Callable[[], Script], failure: str, limit: int
) -> None:
    result = await play(acting(script), researcher(), max_tokens=64)
    assert result.failure == failure
    assert turns_since_progress(result) <= limit + 2, [s.progress for s in result.steps]
