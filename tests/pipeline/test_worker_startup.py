"""A worker that cannot start (here: no jail for the agents' commands on its node) ends the run in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT


@pytest.mark.slow
def test_a_worker_refusing_at_start_ends_the_run_with_one_line(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pipeline.synthesize",
        f"run.dir={tmp_path / 'run'}",
        "limit=2",
        "tracking=disabled",
        "stages=[tasks,rollouts]",
        "rollouts.runner=fakes.runner:JaillessRunner",
        "ray.num_workers=1",
        "ray.num_cpus_per_worker=0.5",
    ]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("python -m pipeline.synthesize: error:")]
    assert errors == ["python -m pipeline.synthesize: error: tools.sandbox.jail=bubblewrap: bwrap is not on PATH on this node"], (
        done.stderr[-3000:]
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run" / "units" / "rollouts").exists() or not list((tmp_path / "run" / "units" / "rollouts").iterdir())
