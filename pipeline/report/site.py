"""The static report: report/index.html, one page per rollout, thumbnails and local assets.

Pages link to the run's own files by relative path (renders, previews, PDFs), so the
site opens from the file system with no server and no network; all HTML is rendered
by Jinja with autoescape on.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

import jinja2

from core.failures import category_of
from core.records import ArtifactError, Rollout
from core.run.reader import RunReader
from filters.acceptance import ENVIRONMENT
from filters.report import PAPER_SHARES, SEVERITIES
from pipeline.report import charts
from pipeline.report.data import RolloutRead, RunData
from pipeline.report.figures import TABLE_FIELDS, Figures, RolloutRow
from pipeline.report.steps import TrajectoryView, view
from pipeline.report.thumbs import ThumbStats, make_thumbnails

HERE = Path(__file__).parent
AGENT_ORDER = ("researcher", "presenter", "single")
NONE = "–"  # what a figure that does not exist yet shows
FILTERS = ("source", "language", "status", "category")  # the task table's filters (RolloutRow attributes)
ROW_FIELDS = (*TABLE_FIELDS, "failure")  # what report.js shows of each row (rows.js)
PAGE = 100  # rows of the task table per page; the first page's decks get thumbnails
ROWS = "rows.js"
STAGE_LABELS = {
    "task_drafts": "tasks: drafts",
    "task_gate": "tasks: quality gate",
    "verdicts": "filters",
    "eval_scores": "eval: scores",
}


@dataclass(frozen=True)
class Site:
    index: Path
    pages: int
    covers: dict[str, Path]  # task_id -> thumbnail of the deck's first slide
    thumb_stats: ThumbStats


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["href"] = lambda path: quote(str(path))
    env.filters["count"] = lambda n: NONE if n is None else f"{n:,.0f}"
    env.filters["share"] = lambda x: NONE if x is None else f"{100 * x:.1f}%"
    env.filters["fixed"] = lambda x, digits: NONE if x is None else f"{x:.{digits}f}"
    env.filters["usd"] = lambda x: NONE if x is None else f"${x:,.4f}"
    return env


def _render(name: str, **context: Any) -> str:
    return _environment().get_template(name).render(**context)


class RolloutPages:
    """Each rollout's page, written as the figures' pass reads the rollout (one behind: a page links to the one
    after it); the decks of the task table's first page are kept for thumbnails."""

    def __init__(self, run: RunData):
        self.run = run
        self.folder = run.root / "report" / "rollouts"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.firsts: dict[str, str] = {}  # task_id -> its deck's first slide, run-relative (the first PAGE rows)
        self._held: tuple[RolloutRead, RolloutRow] | None = None
        self._previous: str | None = None

    def add(self, seen: RolloutRead, row: RolloutRow) -> None:
        if self.count < PAGE and seen.slides and seen.slides[0].png:  # a sample: 10,000 rows are not 10,000 thumbnails
            self.firsts[row.task_id] = f"{self.run.workspace(seen.rollout)}/{seen.slides[0].png}"
        self.count += 1
        self._write(following=row.task_id)
        self._held = (seen, row)

    def close(self) -> None:
        self._write(following=None)

    def _write(self, following: str | None) -> None:
        if self._held is None:
            return
        seen, row = self._held
        page = _rollout_page(self.run, seen, row, self._previous, following)
        (self.folder / f"{row.task_id}.html").write_text(page, encoding="utf-8")
        self._previous, self._held = row.task_id, None


def write_site(run: RunData, figures: Figures, pages: RolloutPages) -> Site:
    """Write the index, the task table's rows and their thumbnails (the rollout pages are written by `pages`)."""
    out = run.root / "report"
    shutil.copytree(HERE / "static", out / "static", dirs_exist_ok=True)
    thumbs, stats = make_thumbnails(run.root, out / "thumbs", pages.firsts.values())
    covers = {task_id: thumbs[source] for task_id, source in pages.firsts.items() if source in thumbs}
    (out / ROWS).write_text(_rows_script(figures.rows, covers), encoding="utf-8")  # as the pages: readable by a web server
    index = out / "index.html"
    index.write_text(_index_page(run, figures, covers), encoding="utf-8")
    return Site(index, pages.count, {task_id: out / thumb for task_id, thumb in covers.items()}, stats)


def _rows_script(rows: Sequence[RolloutRow], covers: dict[str, str]) -> str:
    """Every row of the task table as data for report.js, which filters, searches and pages it in the browser: the
    index itself holds one page of rows, so it opens as fast for 10,000 rollouts as for 10 (a script, not JSON:
    pages opened from the file system cannot fetch)."""
    data = [[getattr(row, name) for name in ROW_FIELDS] + [covers.get(row.task_id)] for row in rows]
    payload = json.dumps({"columns": [*ROW_FIELDS, "cover"], "rows": data, "page": PAGE}, separators=(",", ":"))
    safe = payload.replace("</", "<\\/")  # no "</script>" inside the script
    return f"window.ROLLOUT_ROWS = {safe};\n"


def _index_page(run: RunData, figures: Figures, covers: dict[str, str]) -> str:
    options = {name: sorted({getattr(row, name) for row in figures.rows}) for name in FILTERS}
    return _render(
        "index.html.j2",
        root="",
        page=PAGE,
        title=f"Run report: {run.root.name}",
        run=run,
        figures=figures,
        charts=_charts(figures),
        paper_shares=PAPER_SHARES,
        options=options,
        covers=covers,
        generated=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        files={name: (run.root / name).exists() for name in ("tasks/stats.md", "filters/failures.md", "stats/usage.json")},
        stage_labels=STAGE_LABELS,
        failure_about=category_of,
    )


def _charts(figures: Figures) -> list[charts.Chart]:
    found = [
        charts.bars("Funnel", {s.label: s.count for s in figures.funnel if s.count is not None}, "nothing yet", ordered=True),
        charts.bars("Failed rollouts by failure", figures.failures, "no rollout failed"),
    ]
    if figures.outcomes is not None:
        found.append(charts.bars("Filter outcome per rollout", figures.outcomes, "no rollout filtered"))
        found.append(charts.stacked_bars("Verdicts by gate", list(figures.gates.items()), ["passed", "failed"], "no verdicts"))
    codes = sorted({c for c, _ in figures.defects}, key=lambda c: (-sum(figures.defects[(c, s)] for s in SEVERITIES), c))
    rows = [(code, {s: figures.defects[(code, s)] for s in SEVERITIES}) for code in codes]
    found.append(charts.stacked_bars("Measured defects in final decks", rows, SEVERITIES, "no defects measured"))
    found.append(charts.bars("Critic findings by category", figures.findings, "no critic findings"))
    return found


def _rollout_page(run: RunData, seen: RolloutRead, row: RolloutRow, previous: str | None, following: str | None) -> str:
    rollout = seen.rollout
    trajectories, broken = _trajectories(run.reader, rollout)
    order = {gate: i for i, gate in enumerate((ENVIRONMENT, *run.gates))}
    return _render(
        "rollout.html.j2",
        root="../",
        title=f"Rollout {rollout.task_id}",
        rollout=rollout,
        row=row,
        task=seen.task,
        ws=f"../../{run.workspace(rollout)}",
        slides=seen.slides,
        pptx=seen.pptx,
        trajectories=trajectories,
        broken=broken,
        verdicts=sorted(seen.verdicts, key=lambda v: order.get(v.gate, len(order))),
        artifacts={name: f"../../{path}" for name, path in sorted(rollout.artifacts.items()) if (run.root / path).exists()},
        previous=previous,
        following=following,
    )


def _trajectories(run: RunReader, rollout: Rollout) -> tuple[list[TrajectoryView], list[str]]:
    """The rollout's trajectories, researcher first; unreadable files are named, not fatal."""
    views, broken = [], []
    for file in run.trajectory_files(rollout):
        try:
            views.append(view(run.trajectory(file)))
        except ArtifactError as exc:
            broken.append(f"{file.path.name}: {str(exc).removeprefix(f'{file.path}: ')}")
    views.sort(key=lambda v: (AGENT_ORDER.index(v.agent) if v.agent in AGENT_ORDER else len(AGENT_ORDER), v.agent))
    return views, broken
