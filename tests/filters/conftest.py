"""Fixtures of the filter tests: the real documents (tests/filters/helpers.py), the scenario's run directory with
PyMuPDF or Chromium decks, and the content gate's page decks exported once."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import pytest_asyncio

from core.seams.deck import FILE as DECK_FILE
from deck.export import export_deck
from fakes.runs import build_run
from render.config import RenderConfig
from render.renderer import Renderer
from tests.filters.content_set import PAGE_DECKS, export_pages, load_set
from tests.filters.helpers import SCENARIO, SCENARIO_RUN, SHARED_DATA


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def page_decks(renderer: Renderer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The content gate's page decks, each exported once: deck id -> its workspace."""
    return await export_pages(renderer, load_set(PAGE_DECKS), tmp_path_factory.mktemp("page_decks"))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"{SHARED_DATA} is missing: the shared documents are part of the test assets")
    return SHARED_DATA


# ---------------------------------------------------------------- a synthetic run: one rollout per outcome


async def _export_with_chromium(decks: list[tuple[Path, str]]) -> None:
    """The real deck export (deck.export.export_deck: PDF, previews, deck_defects.json) of each (workspace, aspect),
    over what the builder wrote."""
    async with Renderer(RenderConfig(max_concurrent=4, max_pages=4, timeout_s=30), roots=[ws for ws, _ in decks]) as renderer:
        exports = [
            export_deck(renderer, ws / "slides", aspect, ws / "deck.pdf", png_dir=ws / "previews", report_path=ws / DECK_FILE)
            for ws, aspect in decks
        ]
        await asyncio.gather(*exports)


def _scenario(root: Path, real: bool) -> Path:
    build_run(root, SCENARIO_RUN)
    if real:
        exported = [s for s in SCENARIO if s.exported and not s.failure]
        asyncio.run(_export_with_chromium([(root / "rollouts" / s.task_id, s.aspect) for s in exported]))
    return root


@pytest.fixture(scope="session", params=[pytest.param("real", marks=pytest.mark.chromium), "fake"])
def scenario_template(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's run directory, decks exported once per session (real: Chromium; fake: PyMuPDF)."""
    return _scenario(tmp_path_factory.mktemp(f"scenario-{request.param}"), request.param == "real")


@pytest.fixture
def scenario_run(scenario_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the scenario's run directory for one test."""
    return Path(shutil.copytree(scenario_template, tmp_path / "run"))


@pytest.fixture
def fake_scenario_run(tmp_path: Path) -> Path:
    """The scenario with PyMuPDF decks only (for tests about the orchestration, not the decks)."""
    return _scenario(tmp_path / "run", real=False)
