"""benchmarks.client_overhead runs as documented (its figures are the benchmark's business, not a test's)."""

from __future__ import annotations

import subprocess
import sys

from core.config import PROJECT_ROOT


def test_the_documented_command_prints_its_table() -> None:
    command = [sys.executable, "-m", "benchmarks.client_overhead", "--calls", "20"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "overhead median" in done.stdout and "bare SDK median" in done.stdout
