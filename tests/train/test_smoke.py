"""CPU smoke training: `python -m train.sft model=tiny` trains a tiny GLM-4V on an export and saves a checkpoint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from core.config import PROJECT_ROOT
from train.export import ExportReport

pytestmark = [pytest.mark.swift, pytest.mark.slow]


def test_tiny_glm4v_trains_on_the_export(exported: ExportReport, tiny_model: Path, tmp_path: Path) -> None:
    run_dir = exported.out_dir.parent
    output = tmp_path / "checkpoints"
    # the vision tower is trained too, so that its change shows the images reached the loss
    command = [
        sys.executable,
        "-m",
        "train.sft",
        "model=tiny",
        f"run.dir={run_dir}",
        f"model.id={tiny_model}",
        f"train.output_dir={output}",
        "tracking=disabled",
        "train.freeze_vit=false",
        "train.freeze_aligner=false",
    ]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=240)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert "# dataset: OK" in done.stdout  # every row encoded, each image expanded to many image tokens
    weights = load_file(output / "checkpoint-3" / "model.safetensors")
    initial = load_file(tiny_model / "model.safetensors")
    visual = [k for k in initial if "visual" in k]
    assert visual and any(not weights[k].equal(initial[k]) for k in visual)
    assert (output / "checkpoint-3" / "trainer_state.json").is_file()
