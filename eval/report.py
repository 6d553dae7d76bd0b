"""The paper's tables and Figure 6: eval's last stage for its own run, and `python -m eval.report` over several.

The stage (`report`) writes `<run>/report/`: table2.{md,csv}, table3.{md,csv}, domains.{md,csv},
checklist.{md,csv}, cost_vs_score.png and report.md (all of them on one page, and each deck's failed checks),
and logs them to wandb.

    python -m eval.report RUN_DIR [RUN_DIR ...] --out DIR

does the same over several finished `python -m eval.run` runs (their scores/summary.json; the first one's domains
make Table 6) and prints Table 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

from core.cli import InputError, OneLineParser, run_command
from core.run.context import RunContext
from core.run.store import atomic_write_text
from eval.checklist.stage import RESULTS
from eval.figures import cost_vs_score
from eval.scoring import SCORES
from eval.summary import SUMMARY, RunSummary
from eval.tables import Table, checklist_table, domain_table, table2, table3

STAGE = "eval/report"
REPORT = "report"
FIGURE = "cost_vs_score.png"


def read_checklist(run: RunSummary) -> dict[str, Any] | None:
    """The run's scores/checklist.json (eval.checklist.stage), None for a run made before checklists."""
    path = Path(run.run_dir) / SCORES / RESULTS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def failed_checks(results: dict[str, Any] | None) -> str:
    """The report's list of each deck's failed checks, with the judge's reasons."""
    lines = ["**Failed checks**", ""]
    for deck in (results or {}).get("decks", []):
        failed = [a for a in deck["answers"] if a["answer"] == "no"]
        if failed:
            lines.append(
                f"- {deck['task_id']} ({deck['percent']:.1f}%):" if deck["percent"] is not None else f"- {deck['task_id']}:"
            )
            lines += [f"  - {a['check_id']} ({a['class']}): {a['question']} — {a['reason']}" for a in failed]
    return "\n".join(lines if len(lines) > 2 else [*lines, "None."]) + "\n"


def write_report(runs: list[RunSummary], out: Path) -> list[Table]:
    """Every table (Markdown and CSV), Figure 6 and report.md for `runs` (the first is this run)."""
    checklists = [read_checklist(run) for run in runs]
    tables = [table2(runs), table3(runs), domain_table(runs[0]), checklist_table(runs, checklists)]
    out.mkdir(parents=True, exist_ok=True)
    for table in tables:
        atomic_write_text(out / f"{table.name}.md", table.markdown())
        atomic_write_text(out / f"{table.name}.csv", table.csv())
    cost_vs_score(runs, out / FIGURE)
    figure = f"**Figure 6: performance vs. price**\n\n![cost vs score]({FIGURE})\n"
    page = [
        f"# Evaluation: {runs[0].framework} + {runs[0].label}",
        "",
        *(t.markdown() for t in tables),
        figure,
        failed_checks(checklists[0]),
    ]
    atomic_write_text(out / "report.md", "\n".join(page))
    return tables


def report(ctx: RunContext) -> dict[str, Any]:
    out = ctx.store.path(REPORT)
    tables = write_report([RunSummary.read(ctx.store.root)], out)
    for table in tables:
        ctx.tracker.table(f"eval/{table.name}", table.columns, table.rows)
    ctx.tracker.table("eval/cost_vs_score", ["figure"], [[out / FIGURE]])
    return {"tables": len(tables)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m eval.report", description="The paper's tables and Figure 6 over several eval runs.")
    parser.add_argument("runs", nargs="+", type=Path, help="eval run directories (the first leads Table 6)")
    parser.add_argument("--out", type=Path, required=True, help="where the tables and the figure go")
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: compare(args.runs, args.out))


def compare(run_dirs: list[Path], out: Path) -> int:
    try:
        runs = [RunSummary.read(run.resolve()) for run in run_dirs]
    except (OSError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a finished eval run (no readable {SUMMARY}): {exc}") from exc
    tables = write_report(runs, out.resolve())
    print(tables[0].markdown())
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
