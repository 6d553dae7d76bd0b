"""`python -m benchmarks.fleet --backend sim ... --json` on the smallest fleet: one object, every mode, every figure."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.config import PROJECT_ROOT

FIGURES = {"capacity_share", "refused_share", "cached_prompt_share", "ttft_p50_s", "turn_p50_s", "turn_p95_s", "rollouts_per_h"}


@pytest.mark.slow
def test_the_simulated_fleet_benchmark_prints_one_object_with_every_mode() -> None:
    small = [
        "--servers",
        "2",
        "--workers",
        "2",
        "--rollouts-per-worker",
        "4",
        "--turns",
        "2",
        "--ramp-s",
        "1",
        "--seconds",
        "2",
        "--slot-calls",
        "50",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.fleet", "--backend", "sim", *small, "--json"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result["modes"]) == {"per_process_429", "shared", "shared_metrics"}
    for figures in result["modes"].values():
        assert set(figures) == FIGURES and figures["ttft_p50_s"] is None  # the simulator does not stream
        assert 0 < figures["capacity_share"] <= 1.05  # measured at the simulated replicas
        assert all(value is None or value >= 0 for value in figures.values())
