"""Fixtures of the train tests: synthetic run directories, their export, and a tiny GLM-4V built locally."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from tests.train.runs import RunShape, build_run
from train.config import ExportConfig
from train.export import ExportReport, export_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Four tasks (one rejected by the quality gate), one failed rollout, one eval-split task."""
    return build_run(tmp_path / "run", RunShape(eval_tasks=1))


@pytest.fixture
def exported(run_dir: Path) -> ExportReport:
    return export_run(run_dir, ExportConfig(val_fraction=0.34))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scripts/make_tiny_model.py, run once per session (about 10 s)."""
    out = tmp_path_factory.mktemp("tiny") / "glm4v"
    subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "make_tiny_model.py"), str(out)], check=True, capture_output=True
    )
    return out
