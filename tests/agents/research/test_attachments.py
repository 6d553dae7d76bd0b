"""Offline search_web and fetch_url also cover the task's own attachments."""

from __future__ import annotations

import shutil
from pathlib import Path

from agents.config import SandboxConfig, ToolsConfig
from agents.research.runtime import RESOURCE_KEY, build_research
from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.toolsets import toolset_for
from core.records import ToolCall

SHARED = Path(__file__).parents[4] / "shared" / "data"


async def test_search_finds_the_attached_document_first(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "attachments").mkdir(parents=True)
    shutil.copy(SHARED / "edu_zh_hit-signals-systems-ch3-frequency-domain.pdf", workspace / "attachments" / "notes.pdf")
    documents = tmp_path / "docs"
    documents.mkdir()
    shutil.copy(SHARED / "arxiv_1409.0473.pdf", documents)
    research = build_research(ToolsConfig(documents=str(documents), build_dir=str(tmp_path / "build")), tmp_path)
    ctx = ToolContext(Workspace(workspace, SandboxConfig()), "researcher", {RESOURCE_KEY: research})
    tools = toolset_for("researcher")
    found = await tools.call(ctx, ToolCall("c1", "search_web", '{"query": "傅里叶变换 频域"}'))
    assert not found.is_error and "corpus://notes" in found.text.splitlines()[2]
    page = await tools.call(ctx, ToolCall("c2", "fetch_url", '{"url": "corpus://notes"}'))
    assert not page.is_error and "频域" in page.text
    shared = await tools.call(ctx, ToolCall("c3", "search_web", '{"query": "neural machine translation align"}'))
    assert "corpus://arxiv_1409.0473" in shared.text  # the shared collection is still searched
