"""`python -m benchmarks.fleet --backend sim ... --json` on the smallest fleet: one object, every mode, every figure."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.fleet import DEFAULT_MODES
from benchmarks.fleet import MODES as KNOWN_MODES
from core.config import PROJECT_ROOT

FIGURES = {
    "capacity_share",
    "refused_share",
    "cached_prompt_share",
    "ttft_p50_s",
    "turn_p50_s",
    "turn_p95_s",
    "rollouts_per_h",
    "units_max_mean",
    "moved_share",
}


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
        "--rounds",
        "2",
        "--modes",
        "shared,shared_round_robin",
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
    assert set(result["modes"]) == {"shared", "shared_round_robin"}
    assert [len(result["repeats"][mode]) for mode in result["modes"]] == [2, 2]  # each mode twice, in turn
    for mode, figures in [*result["modes"].items(), *((m, f) for m, fs in result["repeats"].items() for f in fs)]:
        assert set(figures) == FIGURES and figures["ttft_p50_s"] is None  # the simulator does not stream
        assert 0 < figures["capacity_share"] <= 1.05  # measured at the simulated replicas
        assert all(value is None or value >= 0 for value in figures.values())
        sticky = mode == "shared"  # units are counted where sticky routing placed them
        assert (figures["units_max_mean"] is not None) == sticky and (figures["moved_share"] is not None) == sticky
        assert not sticky or 1.0 <= figures["units_max_mean"] <= 1.25 + 0.5  # 8 rollouts at once on 2 replicas


def test_the_default_modes_are_known() -> None:
    for backend, names in DEFAULT_MODES.items():
        assert set(names.split(",")) <= set(KNOWN_MODES[backend])
