"""The labelled slides (tests/fixtures) and one Renderer for the whole session (a pytest plugin of the root conftest)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import pytest_asyncio

from deck.config import DeckConfig
from deck.export import page_reader
from render.config import RenderConfig
from render.renderer import Renderer, RenderResult

FIXTURES = Path(__file__).parent / "fixtures"
SLIDES = FIXTURES / "slides"
_ASPECT = re.compile(r'<meta name="aspect" content="([^"]+)">')

# Tests that use the session renderer run in the session's event loop.
session_loop = pytest.mark.asyncio(loop_scope="session")


def fixture_aspect(path: Path) -> str:
    """The aspect a fixture slide is meant for (a <meta name="aspect">, default 16:9)."""
    match = _ASPECT.search(path.read_text(encoding="utf-8"))
    return match.group(1) if match else "16:9"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def renderer(tmp_path_factory: pytest.TempPathFactory) -> Renderer:
    """The session's renderer; its jail shows the fixtures and the session's temporary folders."""
    cfg, roots = RenderConfig(max_concurrent=4, max_pages=4, timeout_s=20), [FIXTURES, tmp_path_factory.getbasetemp()]
    async with Renderer(cfg, roots=roots, read_page=page_reader(DeckConfig())) as shared:
        yield shared


async def render_folder(renderer: Renderer, folder: Path, out: Path) -> dict[str, RenderResult]:
    """Every slide of a fixture folder rendered once, concurrently, keyed by file name."""
    files = sorted(folder.glob("*.html"))
    results = await asyncio.gather(
        *(renderer.render(f, fixture_aspect(f), png_path=out / f"{f.stem}.png", workspace=FIXTURES) for f in files)
    )
    return {f.name: r for f, r in zip(files, results)}


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def fixture_results(renderer: Renderer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, RenderResult]:
    """Every fixture slide rendered once, concurrently, keyed by file name."""
    return await render_folder(renderer, SLIDES, tmp_path_factory.mktemp("fixture_renders"))
