"""The paper's tables from eval run summaries, as Markdown and CSV.

Table 2: framework x model, Constraint / Content / Style / Avg. / Diversity (best bold).
Table 3: ablations per model (the full system first, then each "w/o" configuration).
Table 6: the run's scores per domain (PersonaHub / arXiv / FinePDFs by task source).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any, Sequence

from eval.summary import FULL, RunSummary

SCALES = (
    "Constraint, Content, Style and Avg. are on 0-5 (Content and Style 1-5); Diversity is the Vendi score on 0-1 "
    "((VS-1)/(n-1), docs/evaluation.md); – where not measured."
)


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: tuple[str, ...] = ()
    bold_best: tuple[str, ...] = ()  # columns whose highest value is bold in Markdown

    def markdown(self) -> str:
        best = (
            {
                c: max((r[self.columns.index(c)] for r in self.rows if r[self.columns.index(c)] is not None), default=None)
                for c in self.bold_best
            }
            if len(self.rows) > 1
            else {}
        )
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        for row in self.rows:
            cells = []
            for column, value in zip(self.columns, row):
                text = _fmt(value)
                cells.append(f"**{text}**" if best.get(column) is not None and value == best[column] else text)
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines + [""] + [f"- {n}" for n in self.notes]).rstrip() + "\n"

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows([["" if v is None else (round(v, 4) if isinstance(v, float) else v) for v in row] for row in self.rows])
        return out.getvalue()


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _judges(runs: Sequence[RunSummary]) -> tuple[str, ...]:
    notes = [
        f"{r.label}: {r.tasks} tasks, rendered {r.rendered}/{r.tasks} ({r.render_rate:.0%}), "
        f"unjudged {r.unjudged}, judge {r.judge}"
        + (" (SCRIPTED: rule-based, not a model)" if r.judge_scripted else "")
        + (", policy scripted (a rule-based baseline, not a model)" if r.policy == "scripted" else "")
        for r in runs
    ]
    return (SCALES, *notes)


def table2(runs: Sequence[RunSummary]) -> Table:
    columns = ["Framework", "Model", "Constraint", "Content", "Style", "Avg.", "Diversity"]
    rows = [[r.framework, r.label, r.constraint, r.content, r.style, r.avg, r.diversity] for r in runs]
    return Table("table2", "Table 2: frameworks and models", columns, rows, _judges(runs), tuple(columns[2:]))


def table3(runs: Sequence[RunSummary]) -> Table:
    columns = ["Model", "Configuration", "Cons.", "Content", "Style", "Avg."]
    models = list(dict.fromkeys(r.model for r in runs))
    ordered = sorted(runs, key=lambda r: (models.index(r.model), r.variant != FULL, r.variant))
    rows = [[r.model, r.framework if r.variant == FULL else r.variant, r.constraint, r.content, r.style, r.avg] for r in ordered]
    return Table("table3", "Table 3: ablations", columns, rows, _judges(ordered))


def domain_table(run: RunSummary) -> Table:
    columns = ["Domain", "Cons.", "Content", "Style", "Avg.", "Tasks", "Rendered"]
    rows = [[d, m["constraint"], m["content"], m["style"], m["avg"], m["tasks"], m["rendered"]] for d, m in run.domains.items()]
    return Table("domains", f"Table 6: {run.framework} + {run.label} by domain", columns, rows, _judges([run]))
