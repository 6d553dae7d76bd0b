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

from core.records import CheckClass
from eval.summary import FULL, RunSummary

CLASSES = [cls.value for cls in CheckClass]

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


def checklist_table(runs: Sequence[RunSummary], checklists: Sequence[dict[str, Any] | None]) -> Table:
    """Each run's checklist (scores/checklist.json): per class the answers and the mean class score in percent
    over its decks, then overall (the mean deck percent), beside the paper's average (Avg., 0-5)."""
    columns = ["system", "class", "yes", "no", "not_applicable", "score"]
    rows: list[list[Any]] = []
    notes = [
        "score: per class, the mean over decks of weight x yes / (yes + no), in percent of the weight; "
        "overall: the mean deck percent (PresentBench's); paper_average: Constraint/Content/Style's Avg., on 0-5."
    ]
    for run, results in zip(runs, checklists):
        if results is None:
            continue
        decks = results["decks"]
        for cls in CLASSES:
            counted = [d["classes"][cls] for d in decks if cls in d["classes"]]
            percents = [c["percent"] for c in counted if c.get("percent") is not None]
            rows.append([run.label, cls, *_counts(counted), sum(percents) / len(percents) if percents else None])
        deck_percents = [d["percent"] for d in decks if d["percent"] is not None]
        every = [d["classes"][cls] for d in decks for cls in d["classes"]]
        rows.append([run.label, "overall", *_counts(every), sum(deck_percents) / len(deck_percents) if deck_percents else None])
        rows.append([run.label, "paper_average", None, None, None, run.avg])
        if results["stand_in"]:
            left = sum(c["not_applicable"] for c in every)
            notes.append(
                f"{run.label}: judged by the offline stand-in (rules, not a model): it decides the checks with a rule "
                f"(slide count, language, aspect, sections mentioned) and left {left} checks not applicable."
            )
    return Table("checklist", "Checklist scores (PresentBench's classes)", columns, rows, tuple(notes))


def _counts(classes: list[dict[str, Any]]) -> list[int]:
    return [sum(c[k] for c in classes) for k in ("yes", "no", "not_applicable")]
