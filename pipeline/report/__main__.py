"""`python -m pipeline.report RUN_DIR`: write RUN_DIR/report/index.html (no tracking; the stage tracks)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from collections.abc import Sequence

from core.logs import setup_logging
from core.records import RecordError
from pipeline.report.data import NotARun, check_run
from pipeline.report.stage import make_report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.report", description="Write RUN_DIR/report/index.html.")
    parser.add_argument("run_dir", type=Path, help="the run directory")
    args = parser.parse_args(argv)
    root = args.run_dir.resolve()
    try:
        check_run(root)
        setup_logging(root / "logs" / "report.log")
        summary = make_report(root)
    except (NotARun, RecordError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(root / "report" / "index.html")
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
