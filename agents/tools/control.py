"""Control and reasoning tools: the todo list, thinking, and finalize with its per-role checks."""

from __future__ import annotations

import json
import re
from typing import Annotated, Callable, Literal

from pydantic import Field

from agents.tools.registry import ROLES, Tool, ToolContext, ToolError

TODO_FILE = "todo.json"
SLIDES = "slides"  # the folder the deck is exported from (agents/workflow.py)
SLIDE_NAME = re.compile(r"slide_\d{2,}\.html")

Status = Literal["pending", "in_progress", "done"]


def _load_todo(ctx: ToolContext) -> list[dict[str, str]]:
    if ctx.workspace.stat(TODO_FILE) is None:
        return []
    return json.loads(ctx.workspace.read_bytes(TODO_FILE, ctx.sandbox.max_read_bytes))


def _render(items: list[dict[str, str]]) -> str:
    return "\n".join(f"{i}. [{item['status']}] {item['item']}" for i, item in enumerate(items, 1))


def _save_todo(ctx: ToolContext, items: list[dict[str, str]]) -> str:
    ctx.workspace.write_bytes(TODO_FILE, json.dumps(items, ensure_ascii=False, indent=1).encode())
    return _render(items)


async def todo_create(
    ctx: ToolContext,
    items: Annotated[
        list[Annotated[str, Field(min_length=1)]], Field(min_length=1, description="The steps of the plan, in order.")
    ],
) -> str:
    """Write a new todo list (it replaces the current one); every item starts as pending."""
    return _save_todo(ctx, [{"item": item, "status": "pending"} for item in items])


async def todo_update(
    ctx: ToolContext,
    index: Annotated[int, Field(ge=1, description="The item's number as todo_list shows it (1 is the first).")],
    status: Annotated[Status, Field(description="The item's new status.")],
) -> str:
    """Set the status of one todo item."""
    items = _load_todo(ctx)
    if index > len(items):
        raise ToolError(f"There is no item {index}; the todo list has {len(items)} item(s).")
    items[index - 1]["status"] = status
    return _save_todo(ctx, items)


async def todo_list(ctx: ToolContext) -> str:
    """Show the todo list with each item's status."""
    items = _load_todo(ctx)
    return _render(items) if items else "There is no todo list yet; create one with todo_create."


async def thinking(ctx: ToolContext, thought: Annotated[str, Field(description="Your reasoning, plan or reflection.")]) -> str:
    """Think out loud: record reasoning, a plan or a reflection on what you observed. Changes nothing."""
    return thought


def _check_manuscript(ctx: ToolContext, outcome: str) -> str:
    if not outcome.endswith(".md"):
        raise ToolError(f"{outcome!r} is not a markdown file; finalize with the path of your manuscript (e.g. manuscript.md).")
    found = ctx.workspace.stat(outcome)
    if found is None or not found.st_size:
        raise ToolError(f"{outcome!r} does not exist or is empty; write the manuscript before finalizing.")
    return f"Finalized: the manuscript is {outcome}."


def _check_slides(ctx: ToolContext, outcome: str) -> str:
    folder = outcome.strip().strip("/") or SLIDES
    if folder != SLIDES:  # the deck is exported from there
        raise ToolError(f"{outcome!r}: the deck is made from {SLIDES}/; move your slides there and finalize with {SLIDES}/.")
    found = ctx.workspace.stat(folder)
    if found is None:
        raise ToolError(f"{folder}/ does not exist; write the slides (slide_01.html, ...) into it before finalizing.")
    files = [e.path.name for e in ctx.workspace.entries(folder, depth=1) if e.kind != "dir"]
    strays = [name for name in files if not SLIDE_NAME.fullmatch(name)]
    if strays:
        raise ToolError(f"{folder}/ must hold only slide_NN.html files; move or delete: {', '.join(strays)}.")
    if not files:
        raise ToolError(f"{folder}/ is empty; write the slides (slide_01.html, ...) before finalizing.")
    return f"Finalized: {len(files)} slide(s) in {folder}/."


FINAL_CHECKS: dict[str, Callable[[ToolContext, str], str]] = {
    "researcher": _check_manuscript,
    "presenter": _check_slides,
    "single": _check_slides,
}


async def finalize(
    ctx: ToolContext,
    outcome: Annotated[
        str,
        Field(description="Researcher: the manuscript's path (e.g. manuscript.md). Presenter: the slides folder (e.g. slides/)."),
    ],
) -> str:
    """Finish the task and hand over the result; refused (with the reason) when the result is not ready."""
    return FINAL_CHECKS[ctx.role](ctx, outcome)


TOOLS = (
    Tool.from_function(todo_create, *ROLES, informs=False),
    Tool.from_function(todo_update, *ROLES, informs=False),
    Tool.from_function(todo_list, *ROLES, informs=False),
    Tool.from_function(thinking, *ROLES, informs=False),
    Tool.from_function(finalize, *ROLES, informs=False),
)
