"""Fixtures of the train tests: synthetic run directories, their export, and a tiny GLM-4V built locally."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from core.run.reader import RunReader
from fakes.runs import build_run, training_run
from train.config import ExportConfig
from train.export import ExportReport, export_run


@pytest.fixture(scope="session")
def _synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`run_dir`'s run, built once per session (each test gets a copy of its own)."""
    return build_run(tmp_path_factory.mktemp("train-run") / "run", training_run(eval_tasks=1))


@pytest.fixture(scope="session")
def _synthetic_export(_synthetic_run: Path, tmp_path_factory: pytest.TempPathFactory) -> ExportReport:
    """`exported`'s export of that run, made once per session (each export loads a tokenizer for its parity check)."""
    root = shutil.copytree(_synthetic_run, tmp_path_factory.mktemp("train-export") / "run")
    return export_run(RunReader(root), ExportConfig(val_fraction=0.34))


@pytest.fixture
def run_dir(_synthetic_run: Path, tmp_path: Path) -> Path:
    """Four tasks (one rejected by the quality gate), one failed rollout, one eval-split task."""
    return shutil.copytree(_synthetic_run, tmp_path / "run")


@pytest.fixture
def exported(run_dir: Path, _synthetic_export: ExportReport) -> ExportReport:
    """run_dir exported with val_fraction=0.34: the session's export copied into it, as export_run(RunReader(run_dir)) leaves it."""
    source = _synthetic_export.out_dir.parent
    shutil.copytree(source, run_dir, dirs_exist_ok=True)  # the same run plus what the export wrote (sft/, stats/export.json)
    figures = run_dir / "stats" / "export.json"
    figures.write_text(figures.read_text(encoding="utf-8").replace(str(source), str(run_dir)), encoding="utf-8")
    return replace(copy.deepcopy(_synthetic_export), out_dir=run_dir / _synthetic_export.out_dir.relative_to(source))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scripts/make_tiny_model.py, run once per session (about 10 s)."""
    out = tmp_path_factory.mktemp("tiny") / "glm4v"
    subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "make_tiny_model.py"), str(out)], check=True, capture_output=True
    )
    return out
