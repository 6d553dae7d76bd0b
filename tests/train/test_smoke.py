"""CPU smoke training: `python -m train.sft model=tiny` trains a tiny GLM-4V on an export (SFT, DPO, KTO) and saves a
checkpoint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from core.config import PROJECT_ROOT
from core.run.reader import RunReader
from fakes.runs import build_run, preference_run, training_run
from train.config import ExportConfig
from train.export import ExportReport, export_run
from train.preference import PreferenceFormat, export_preferences

pytestmark = [pytest.mark.swift, pytest.mark.slow]


@pytest.fixture
def small_export(tmp_path: Path) -> ExportReport:
    """The smallest export that shows the path: two tasks of one work step per agent (train and val rows, one slide image)."""
    run_dir = build_run(tmp_path / "run", training_run(tasks=2, failed=0, steps=1))
    return export_run(RunReader(run_dir), ExportConfig(val_fraction=0.5))


def train_tiny(run_dir: Path, tiny_model: Path, output: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """`python -m train.sft model=tiny` on the run's data, checkpoints to `output`; it must succeed."""
    command = [sys.executable, "-m", "train.sft", "model=tiny", f"run.dir={run_dir}", f"model.id={tiny_model}"]
    command += [f"train.output_dir={output}", "tracking=disabled", *overrides]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


def test_tiny_glm4v_trains_on_the_export(small_export: ExportReport, tiny_model: Path, tmp_path: Path) -> None:
    run_dir = small_export.out_dir.parent
    assert small_export.train and small_export.val and any(e.sample.images for e in small_export.train)
    output = tmp_path / "checkpoints"
    # the vision tower is trained too, so that its change shows the images reached the loss
    done = train_tiny(run_dir, tiny_model, output, "train.freeze_vit=false", "train.freeze_aligner=false")
    assert "# dataset: OK" in done.stdout  # every row encoded, each image expanded to many image tokens
    weights = load_file(output / "checkpoint-3" / "model.safetensors")
    initial = load_file(tiny_model / "model.safetensors")
    visual = [k for k in initial if "visual" in k]
    assert visual and any(not weights[k].equal(initial[k]) for k in visual)
    assert (output / "checkpoint-3" / "trainer_state.json").is_file()


@pytest.mark.parametrize("method", ["dpo", "kto"])
def test_tiny_glm4v_takes_a_preference_step(method: str, tiny_model: Path, tmp_path: Path) -> None:
    """`train.sft --method dpo|kto`: the export of a run with 3 rollouts per task validates and trains one step."""
    run_dir = build_run(tmp_path / "run", preference_run(tasks=1))
    report = export_preferences(RunReader(run_dir), ExportConfig(val_fraction=0.0), PreferenceFormat(method))
    assert report.rows_train >= 2 and report.parity is not None and report.parity.ok
    output = tmp_path / "checkpoints"
    overrides = ["--method", method, "train.max_steps=1", "train.save_steps=1", "train.global_batch_size=2"]
    done = train_tiny(run_dir, tiny_model, output, *overrides, "train.per_device_batch_size=2", "train.max_length=16384")
    assert "# dataset: OK" in done.stdout and f"--rlhf_type {method}" in done.stdout
    assert ("DPO pairs" if method == "dpo" else "KTO labels") in done.stdout
    weights = load_file(output / "checkpoint-1" / "model.safetensors")
    initial = load_file(tiny_model / "model.safetensors")
    assert any(not weights[k].equal(initial[k]) for k in initial)
