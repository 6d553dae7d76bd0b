"""Fixtures of the research tools' tests: a workspace with a research context (over tests/agents/conftest.py's
corpus index and image library), tools called as the model calls them, and a scripted loopback HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator, Callable, Optional

import pytest

from agents.config import SandboxConfig, ToolsConfig
from agents.research.runtime import RESOURCE_KEY, Research, build_research
from agents.sandbox import Workspace
from agents.tools import ToolContext
from fakes.http_server import ScriptedServer
from tests.agents.research.helpers import ONLINE_SERVICES, Call, caller


@pytest.fixture(autouse=True)
def service_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ONLINE_SERVICES:
        monkeypatch.setenv(f"TEST_{name.upper()}_KEY", f"key-{name}")


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root, SandboxConfig(call_timeout_s=30))


@pytest.fixture
def research_call(tools_config: ToolsConfig, workspace: Workspace, tmp_path: Path) -> Callable[..., Call]:
    """`research_call(cfg)` or `research_call(research=r)`: a caller with that research context, in the
    test's workspace or in `root` (a fresh one)."""

    def make(cfg: Optional[ToolsConfig] = None, research: Optional[Research] = None, root: Optional[Path] = None) -> Call:
        research = research or build_research(cfg or tools_config, tmp_path)
        if root is not None:
            root.mkdir(parents=True)
        ctx = ToolContext(Workspace(root or workspace.root, research.config.sandbox), "researcher", {RESOURCE_KEY: research})
        return caller(ctx)

    return make


@pytest.fixture
def call(research_call: Callable[..., Call]) -> Call:
    return research_call()


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    async with ScriptedServer() as srv:
        yield srv
