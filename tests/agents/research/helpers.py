"""What the research tools' tests share: recorded API answers, a config pointed at a loopback server, and a tool
called as the model calls it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Awaitable, Callable

from agents.config import ServiceConfig, ToolsConfig
from agents.tools import ToolContext
from agents.tools.toolsets import toolset_for
from core.records import ToolCall
from core.seams.steps import Observation

RESPONSES = Path(__file__).parent / "responses"
ONLINE_SERVICES = ("searxng", "tavily", "brave", "openverse", "wikimedia", "arxiv", "semantic_scholar")

Call = Callable[..., Awaitable[Observation]]


def response(name: str) -> Any:
    """A recorded-shape API answer from responses/ (JSON parsed; anything else as text)."""
    path = RESPONSES / name
    return json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else path.read_text(encoding="utf-8")


def pointed_at(cfg: ToolsConfig, url: str, **changes: Any) -> ToolsConfig:
    """`cfg` with every online service at `url` (a loopback server) and test keys, plus `changes`."""
    services = {name: ServiceConfig(url, f"TEST_{name.upper()}_KEY") for name in ONLINE_SERVICES}
    return replace(cfg, services=services, **changes)


def caller(ctx: ToolContext) -> Call:
    """`caller(ctx)("search_web", query=...)`: a research tool called as the model calls it (JSON arguments, by name)."""
    tools = toolset_for("researcher")

    async def run(name: str, **arguments: Any) -> Observation:
        return await tools.call(ctx, ToolCall("call_0", name, json.dumps(arguments)))

    return run
