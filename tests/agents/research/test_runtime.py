"""The research runtime: config checks before any call, default index and library built once from `documents`."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from agents.config import ToolsConfig
from agents.research.runtime import RESOURCE_KEY, build_research, validate_tools_config
from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.toolsets import toolset_for
from core.config import ConfigError
from tests.agents.research.helpers import caller, pointed_at

RESEARCH_TOOLS = [
    "search_web",
    "fetch_url",
    "search_images",
    "search_papers",
    "get_paper_authors",
    "get_scholar_details",
    "convert_to_markdown",
    "document_analyze",
    "image_caption",
    "image_generation",
]


def test_the_researcher_gets_every_research_tool() -> None:
    assert set(RESEARCH_TOOLS) <= set(toolset_for("researcher").tools)
    assert not set(RESEARCH_TOOLS) & set(toolset_for("presenter").tools)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"search_backend": "google"}, "tools.search_backend='google': unknown"),
        ({"image_backend": "flickr"}, "tools.image_backend='flickr': unknown"),
        ({"paper_backend": "scholar"}, "tools.paper_backend='scholar': unknown"),
        ({"fetch_backend": "curl"}, "tools.fetch_backend='curl': unknown"),
        ({"cache": "sometimes"}, "tools.cache='sometimes'"),
        ({"cache": "replay", "cache_dir": "/nonexistent/cache"}, "does not exist"),
        ({"corpus_index": "/nonexistent/index.db"}, "tools.corpus_index='/nonexistent/index.db' does not exist"),
        ({"documents": "/nonexistent/docs"}, "tools.documents='/nonexistent/docs' does not exist"),
    ],
)
def test_bad_configs_fail_before_any_call(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_tools_config(replace(ToolsConfig(), **changes))


def test_keyed_backends_need_their_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="TAVILY_API_KEY"):
        validate_tools_config(ToolsConfig(search_backend="tavily"))
    monkeypatch.setenv("TAVILY_API_KEY", "k")
    validate_tools_config(ToolsConfig(search_backend="tavily"))
    validate_tools_config(
        pointed_at(ToolsConfig(), "http://127.0.0.1:1", search_backend="brave", paper_backend="semantic_scholar")
    )


async def test_default_index_and_library_are_built_once_from_documents(tmp_path: Path, shared_data: Path) -> None:
    documents = tmp_path / "documents"
    documents.mkdir()
    for name in ("arxiv_1706.03762.pdf", "edu_zh_thu-numerical-analysis-notes.pdf"):
        shutil.copy(shared_data / name, documents)
    cfg = ToolsConfig(documents=str(documents), build_dir=str(tmp_path / "build"), cache="off")
    research = build_research(cfg, tmp_path)
    (workspace := tmp_path / "ws").mkdir()
    call = caller(ToolContext(Workspace(workspace), "researcher", {RESOURCE_KEY: research}))
    assert "corpus://edu_zh_thu-numerical-analysis-notes" in (await call("search_web", query="数值分析")).text
    assert "assets/library/arxiv_1706.03762-p3-1.png" in (await call("search_images", query="Transformer")).text
    images, index = sorted(p.name for p in (tmp_path / "build").iterdir())
    assert index.startswith("documents-") and index.endswith(".db") and images == index.removesuffix(".db") + "-images"
    again = build_research(cfg, tmp_path)
    assert (await again.corpus()).path == (await research.corpus()).path  # reused, not rebuilt


async def test_prepare_builds_what_the_offline_backends_read_before_any_tool_call(tmp_path: Path, shared_data: Path) -> None:
    documents = tmp_path / "documents"
    documents.mkdir()
    shutil.copy(shared_data / "arxiv_1706.03762.pdf", documents)
    build = tmp_path / "build"
    await build_research(
        ToolsConfig(documents=str(documents), build_dir=str(build), image_backend="wikimedia"), tmp_path
    ).prepare()
    assert [p.suffix for p in build.iterdir()] == [".db"]  # the corpus only: images come from a web backend
    await build_research(ToolsConfig(documents=str(documents), build_dir=str(build)), tmp_path).prepare()
    assert sorted(p.suffix for p in build.iterdir()) == ["", ".db"]  # and now the image library
