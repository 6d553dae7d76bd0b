"""Tools and toolsets: schemas from signatures, argument validation, errors, timeouts, long outputs, roles."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
from typing import Annotated, Any, Awaitable, Callable, Literal

import pytest
from pydantic import Field

from agents.config import SandboxConfig
from agents.sandbox import Workspace
from agents.tools import Tool, ToolContext, ToolError, Toolset
from agents.tools.registry import ToolCrashed
from agents.tools.toolsets import TOOLS, toolset_for
from core.records import ToolCall
from core.seams.steps import Observation

RUNTIME_TOOLS = [
    "read_file",
    "write_file",
    "edit_file",
    "move_file",
    "create_directory",
    "list_directory",
    "download_file",
    "execute_command",
    "todo_create",
    "todo_update",
    "todo_list",
    "thinking",
    "finalize",
]

Call = Callable[..., Awaitable[Observation]]


async def paint(
    ctx: ToolContext,
    color: Annotated[Literal["red", "blue"], Field(description="The paint colour.")],
    coats: Annotated[int, Field(ge=1, le=3, description="How many coats.")] = 1,
) -> str:
    """Paint the wall.

    Takes a while to dry."""
    if color == "blue":
        raise RuntimeError("out of blue paint")
    return f"painted {coats} coat(s) of {color}"


async def nap(ctx: ToolContext, seconds: float) -> str:
    """Sleep."""
    await asyncio.sleep(seconds)
    return "rested"


async def shout(ctx: ToolContext, lines: int) -> str:
    """Print many lines."""
    return "".join(f"line {i:05d}\n" for i in range(lines))


@pytest.fixture
def tools() -> Toolset:
    return Toolset.of(Tool.from_function(fn) for fn in (paint, nap, shout))


async def run(tools: Toolset, ctx: ToolContext, name: str, arguments: str) -> Observation:
    return await tools.call(ctx, ToolCall("c1", name, arguments))


def test_schema_comes_from_the_signature_and_docstring() -> None:
    schema = Tool.from_function(paint).schema
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "paint" and fn["description"] == "Paint the wall.\n\nTakes a while to dry."
    params = fn["parameters"]
    assert params["required"] == ["color"] and params["additionalProperties"] is False
    assert params["properties"]["color"] == {"description": "The paint colour.", "enum": ["red", "blue"], "type": "string"}
    assert params["properties"]["coats"] == {
        "default": 1,
        "description": "How many coats.",
        "maximum": 3,
        "minimum": 1,
        "type": "integer",
    }
    assert "title" not in json.dumps(schema)


@pytest.mark.parametrize(
    "arguments,expected",
    [
        ('{"color": "red"', "not valid JSON"),
        ('["red"]', "must be a JSON object"),
        ("{}", "- color: Field required"),
        ('{"color": "green"}', "- color: Input should be 'red' or 'blue'"),
        ('{"color": "red", "coats": 9}', "- coats: Input should be less than or equal to 3"),
        ('{"color": "red", "brush": "wide"}', "- brush: Extra inputs are not permitted"),
    ],
)
async def test_bad_arguments_become_readable_errors(tools: Toolset, ctx: ToolContext, arguments: str, expected: str) -> None:
    obs = await run(tools, ctx, "paint", arguments)
    assert obs.is_error and expected in obs.text and "paint" in obs.text


async def test_good_arguments_reach_the_tool(tools: Toolset, ctx: ToolContext) -> None:
    assert (await run(tools, ctx, "paint", '{"color": "red", "coats": "2"}')).text == "painted 2 coat(s) of red"


async def test_an_undocumented_exception_is_a_crash_logged_with_its_stack(
    tools: Toolset, ctx: ToolContext, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agents.tools.registry"), pytest.raises(ToolCrashed) as crash:
        await run(tools, ctx, "paint", '{"color": "blue"}')
    assert crash.value.tool == "paint" and str(crash.value) == "paint raised RuntimeError: out of blue paint"
    assert any(r.levelno == logging.WARNING and r.exc_info and "out of blue paint" in str(r.exc_info[1]) for r in caplog.records)


async def test_the_call_timeout_stops_a_tool(tools: Toolset, workspace: Workspace) -> None:
    ctx = ToolContext(Workspace(workspace.root, SandboxConfig(call_timeout_s=0.1)), "presenter")
    obs = await run(tools, ctx, "nap", '{"seconds": 5}')
    assert obs.is_error and "0.1 s" in obs.text


async def test_cancellation_is_not_swallowed(tools: Toolset, ctx: ToolContext) -> None:
    task = asyncio.create_task(run(tools, ctx, "nap", '{"seconds": 5}'))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_unknown_tool(tools: Toolset, ctx: ToolContext) -> None:
    obs = await run(tools, ctx, "fly", "{}")
    assert obs.is_error and "paint, nap, shout" in obs.text


async def test_long_output_is_cut_at_a_line_and_saved_whole(tools: Toolset, ctx: ToolContext, caller: Callable) -> None:
    obs = await run(tools, ctx, "shout", '{"lines": 2000}')
    whole = "".join(f"line {i:05d}\n" for i in range(2000))
    shown = obs.text.split("\n[output cut")[0]
    assert len(shown) <= ctx.sandbox.max_output_chars and whole.startswith(shown) and shown.endswith("\n")
    assert ".outputs/shout_1.txt" in obs.text and (ctx.workspace.root / ".outputs/shout_1.txt").read_text() == whole
    assert (await run(tools, ctx, "shout", '{"lines": 2000}')).text == obs.text  # the same output again: the same copy
    assert ".outputs/shout_2.txt" in (await run(tools, ctx, "shout", '{"lines": 2001}')).text
    text, more = shown, obs.text  # the model pages through the rest with read_file
    while match := re.search(r"offset=(\d+)", more):
        page = (await caller(ctx)("read_file", path=".outputs/shout_1.txt", offset=int(match[1]))).text
        body, _, more = page.partition("\n[characters ")
        text += body
    assert text == whole


def test_roles_get_their_tools() -> None:
    for role in ("researcher", "presenter", "single"):
        names = list(toolset_for(role).tools)
        assert set(RUNTIME_TOOLS) <= set(names), role
    assert "execute_command" not in toolset_for("researcher", extra_removed=["execute_command"]).tools
    with pytest.raises(ValueError, match="unknown role"):
        toolset_for("critic")


def test_each_role_is_offered_its_tools_in_the_listed_order() -> None:
    """The order is part of what the model reads (and of every SFT sample's `tools`): the runtime tools, then the
    inspect tools, then the Researcher's retrieval tools, as the synthesis runs so far offered them (the order
    registration on import happened to give there; make demo's SFT data is byte-identical to 73e3b82's)."""
    researcher, presenter = list(toolset_for("researcher").tools), list(toolset_for("presenter").tools)
    assert researcher[: len(RUNTIME_TOOLS)] == presenter[: len(RUNTIME_TOOLS)] == RUNTIME_TOOLS
    assert researcher[len(RUNTIME_TOOLS) : len(RUNTIME_TOOLS) + 2] == ["inspect_manuscript", "search_web"]
    assert presenter[len(RUNTIME_TOOLS) :] == ["inspect_slide"]
    assert list(toolset_for("single").tools) == [*researcher, "inspect_slide"]  # each role's, in role order
    assert all(t.roles for t in TOOLS.values())  # every listed tool is offered to some role


def test_a_tool_is_offered_to_known_roles_only() -> None:
    assert Tool.from_function(paint, "researcher").roles == ("researcher",)
    with pytest.raises(ValueError, match="paint: unknown role"):
        Tool.from_function(paint, "critic")


def test_cli_lists_every_role_schema() -> None:
    out = subprocess.run([sys.executable, "-m", "agents.tools", "list"], capture_output=True, text=True, check=True).stdout
    listed: dict[str, list[dict[str, Any]]] = json.loads(out)
    assert set(listed) == {"researcher", "presenter", "single"}
    for name in RUNTIME_TOOLS:
        assert f'"name": "{name}"' in out
        assert all(name in [s["function"]["name"] for s in schemas] for schemas in listed.values())


async def test_tool_error_message_is_the_observation(ctx: ToolContext) -> None:
    async def picky(ctx: ToolContext) -> str:
        """Refuse."""
        raise ToolError("try again with a smaller file")

    obs = await Toolset.of([Tool.from_function(picky)]).call(ctx, ToolCall("c", "picky", ""))
    assert obs == Observation("try again with a smaller file", is_error=True)
