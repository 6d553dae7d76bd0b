"""Fixtures of the agent runtime's tests: a workspace, a tool context, and tools called as the model calls them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from agents.config import SandboxConfig
from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.toolsets import toolset_for
from core.records import ToolCall
from core.seams.steps import Observation

Call = Callable[..., Awaitable[Observation]]


@pytest.fixture
def sandbox() -> SandboxConfig:
    return SandboxConfig(call_timeout_s=10, command_timeout_s=5)


@pytest.fixture
def workspace(tmp_path: Path, sandbox: SandboxConfig) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root, sandbox)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret; tests check it never changes."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret")
    return out


@pytest.fixture
def ctx(workspace: Workspace) -> ToolContext:
    return ToolContext(workspace, role="presenter")


@pytest.fixture
def caller() -> Callable[[ToolContext], Call]:
    """`caller(ctx)("read_file", path=...)`: a tool called as the model calls it (JSON arguments, by name)."""
    tools = toolset_for("single")

    def bind(ctx: ToolContext) -> Call:
        async def run(name: str, raw: str | None = None, **arguments: Any) -> Observation:
            return await tools.call(ctx, ToolCall("call_0", name, raw if raw is not None else json.dumps(arguments)))

        return run

    return bind


@pytest.fixture
def call(caller: Callable[[ToolContext], Call], ctx: ToolContext) -> Call:
    return caller(ctx)
