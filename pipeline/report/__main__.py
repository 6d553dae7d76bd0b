"""`python -m pipeline.report RUN_DIR`: write RUN_DIR/report/index.html (no tracking; the stage tracks)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from core.logs import setup_logging
from core.records import RecordError
from pipeline.report.data import NotARun
from pipeline.report.stage import make_report


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.report", description="Write RUN_DIR/report/index.html.")
    parser.add_argument("run_dir", type=Path, help="the run directory")
    args = parser.parse_args(argv)
    root = args.run_dir.resolve()
    if not root.is_dir():
        parser.error(f"{root}: not a directory")
    setup_logging(root / "logs" / "report.log")
    try:
        figures = make_report(root)
    except (NotARun, RecordError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(root / "report" / "index.html")
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
