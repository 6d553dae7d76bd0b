"""Report generation time for a large run: `python -m benchmarks.report [--rollouts 1000]`.

Builds a synthetic run directory (untimed) with fakes.runs.varied_run: rollouts of
3-12 slides at real slide size (1280x720 or 960x720 PNGs for previews and renders, a
PDF), researcher and presenter trajectories (1 in 3 with a critic injection, 1 in 10
with a context warning, 1 in 10 failed), verdicts of three gates, a stage record and SFT
files. Then times `make_report` twice: cold (every cover thumbnail made) and warm (a
rerun: thumbnails reused from the cache). Target: under 60 s cold for 1,000 rollouts.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from core.run.reader import RunReader
from fakes.runs import build_run, varied_run
from pipeline.report import make_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="build the run here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "run"
        started = time.perf_counter()
        build_run(root, varied_run(args.rollouts))
        print(f"built a {args.rollouts}-rollout run in {time.perf_counter() - started:.1f} s at {root} ({os.cpu_count()} CPUs)")
        for label in ("cold", "warm"):
            started = time.perf_counter()
            figures = make_report(RunReader(root))
            print(f"{label}: {time.perf_counter() - started:.1f} s  {figures}")


if __name__ == "__main__":
    main()
