"""Fixtures of the agents' tests: one corpus index and one image library of ../shared/data per session, and the
offline research settings over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.config import SandboxConfig, ToolsConfig
from agents.research.documents import load_documents
from agents.research.imagelib import build_library
from agents.research.index import build_index

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"{SHARED_DATA} is missing: the shared documents are part of the test assets")
    return SHARED_DATA


@pytest.fixture(scope="session")
def corpus_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "shared.db"
    build_index(load_documents(shared_data), path)
    return path


@pytest.fixture(scope="session")
def library_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("library") / "images"
    build_library(shared_data, folder)
    return folder


@pytest.fixture
def tools_config(corpus_path: Path, library_path: Path, tmp_path: Path) -> ToolsConfig:
    """Offline backends over the session's index and library; the cache records into tmp_path/cache."""
    sandbox = SandboxConfig(call_timeout_s=30)
    return ToolsConfig(
        corpus_index=str(corpus_path),
        image_library=str(library_path),
        cache_dir=str(tmp_path / "cache"),
        http_retries=1,
        http_timeout_s=5,
        sandbox=sandbox,
    )
