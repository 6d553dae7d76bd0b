"""`python -m pipeline.report RUN_DIR`: write RUN_DIR/report/index.html (no tracking; the stage tracks)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from core.cli import OneLineParser, run_command
from core.logs import setup_logging
from core.run.reader import RunReader
from pipeline.report.stage import make_report


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m pipeline.report", description="Write RUN_DIR/report/index.html.")
    parser.add_argument("run_dir", type=Path, help="the run directory")
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: report(RunReader.open(args.run_dir)))


def report(run: RunReader) -> int:
    setup_logging(run.path("logs", "report.log"))
    summary = make_report(run)
    print(run.path("report", "index.html"))
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
