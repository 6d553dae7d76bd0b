"""Eval stage 3: the paper's tables and Figure 6 for this run (`python -m eval.report` for several runs).

Writes `<run>/report/`: table2.{md,csv}, table3.{md,csv}, domains.{md,csv},
cost_vs_score.png and report.md (all of them on one page); logs them to wandb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.run import RunContext
from core.store import atomic_write_text
from eval.figures import cost_vs_score
from eval.summary import RunSummary
from eval.tables import Table, domain_table, table2, table3

STAGE = "eval/report"
REPORT = "report"
FIGURE = "cost_vs_score.png"


def write_report(runs: list[RunSummary], out: Path) -> list[Table]:
    """Every table (Markdown and CSV), Figure 6 and report.md for `runs` (the first is this run)."""
    tables = [table2(runs), table3(runs), domain_table(runs[0])]
    out.mkdir(parents=True, exist_ok=True)
    for table in tables:
        atomic_write_text(out / f"{table.name}.md", table.markdown())
        atomic_write_text(out / f"{table.name}.csv", table.csv())
    cost_vs_score(runs, out / FIGURE)
    figure = f"**Figure 6: performance vs. price**\n\n![cost vs score]({FIGURE})\n"
    page = [f"# Evaluation: {runs[0].framework} + {runs[0].label}", "", *(t.markdown() for t in tables), figure]
    atomic_write_text(out / "report.md", "\n".join(page))
    return tables


def report(ctx: RunContext) -> dict[str, Any]:
    out = ctx.store.path(REPORT)
    tables = write_report([RunSummary.read(ctx.store.root)], out)
    for table in tables:
        ctx.tracker.table(f"eval/{table.name}", table.columns, table.rows)
    ctx.tracker.table("eval/cost_vs_score", ["figure"], [[out / FIGURE]])
    return {"tables": len(tables)}
