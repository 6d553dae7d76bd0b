"""`python -m eval.report RUN_DIR [RUN_DIR ...] --out DIR`: the paper's tables and Figure 6 over several eval runs.

Each RUN_DIR is a finished `python -m eval.run` (its scores/summary.json); the first one's
domains make Table 6. Writes DIR/table2.{md,csv}, table3.{md,csv}, domains.{md,csv},
cost_vs_score.png and report.md, and prints Table 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from eval.reporting import write_report
from eval.summary import SUMMARY, RunSummary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.report", description="The paper's tables and Figure 6 over several eval runs."
    )
    parser.add_argument("runs", nargs="+", type=Path, help="eval run directories (the first leads Table 6)")
    parser.add_argument("--out", type=Path, required=True, help="where the tables and the figure go")
    args = parser.parse_args(argv)
    try:
        runs = [RunSummary.read(run.resolve()) for run in args.runs]
    except (OSError, ValueError, TypeError, json.JSONDecodeError) as exc:
        print(f"{parser.prog}: error: not a finished eval run (no readable {SUMMARY}): {exc}", file=sys.stderr)
        return 2
    tables = write_report(runs, args.out.resolve())
    print(tables[0].markdown())
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
