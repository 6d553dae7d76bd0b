"""Shared assets of the filter tests: the real documents in ../shared/data/, a synthetic run directory, and the
content gate's page decks exported once."""

from __future__ import annotations

import asyncio
import csv
import shutil
from pathlib import Path

import pytest
import pytest_asyncio

from render.renderer import Renderer
from tests.filters.content_set import PAGE_DECKS, export_pages, load_set
from tests.filters.rundir import Spec, build_workspace, export_fake, export_real, write_run

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def shared_pdfs() -> list[dict[str, str]]:
    """MANIFEST.tsv rows of the bundled PDFs: file, pages, page_size_pt, language, ..."""
    with (SHARED_DATA / "MANIFEST.tsv").open(encoding="utf-8") as fh:
        return [row for row in csv.DictReader(fh, delimiter="\t") if row["file"].endswith(".pdf")]


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

SCENARIO = (
    Spec("en-169-ok", "16:9", "en", 3, revision="fix"),
    Spec("zh-43-ok", "4:3", "zh", 2, revision="fix"),
    Spec("en-a1-poster", "A1", "en", 1),
    Spec("zh-169-count", "16:9", "zh", 3, asked_slides=5),
    Spec("en-43-ignored", "4:3", "en", 2, revision="ignore"),
    Spec("en-169-broken", "16:9", "en", 2, broken_image=True),
    Spec("en-169-junk", "16:9", "en", 3, revision="fix", repeated=True),  # the content gate rejects it: no judge sees it
    Spec("zh-failed", "16:9", "zh", 1, status="failed", failure="environment/context_overflow", files=("trajectory:presenter",)),
    Spec("en-no-deck", "16:9", "en", 2),  # finished, but the export left no deck
)
NOT_EXPORTED = {"zh-failed", "en-no-deck"}
EXPECTED = {  # first failing category; None = accepted
    "en-169-ok": None,
    "zh-43-ok": None,
    "en-a1-poster": None,
    "zh-169-count": "constraint",
    "en-43-ignored": "consistency",
    "en-169-broken": "quality",
    "en-169-junk": "duplicate_slides",
    "zh-failed": "environment",
    "en-no-deck": "environment",
}
SCRIPTED = {"llm": {"backend": "scripted", "base_url": "none://scripted", "model": "scripted-policy"}}


def _scenario(root: Path, real: bool) -> Path:
    workspaces = [(build_workspace(root, spec), spec) for spec in SCENARIO]
    exported = [(w, s) for w, s in workspaces if s.task_id not in NOT_EXPORTED]
    if real:
        asyncio.run(export_real(exported))
    else:
        for workspace, spec in exported:
            export_fake(workspace, spec)
    write_run(root, SCENARIO, SCRIPTED)
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
