"""The static report: report/index.html, one page per rollout, thumbnails and local assets.

Pages link to the run's own files by relative path (renders, previews, PDFs), so the
site opens from the file system with no server and no network; all HTML is rendered
by Jinja with autoescape on.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

import jinja2

from core.failures import category_of
from core.records import ArtifactError, Rollout, Verdict
from core.run.reader import RunReader
from core.seams.deck import DeckSlide
from filters.acceptance import ENVIRONMENT
from filters.report import PAPER_SHARES, SEVERITIES
from pipeline.report import charts
from pipeline.report.data import RunData
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


def write_site(run: RunData, figures: Figures) -> Site:
    """Write the site; thumbnails are made of each deck's first slide (the task table, the dashboard)."""
    out = run.root / "report"
    (out / "rollouts").mkdir(parents=True, exist_ok=True)
    shutil.copytree(HERE / "static", out / "static", dirs_exist_ok=True)
    decks = run.decks
    firsts = {
        r.task_id: f"{run.workspace(r)}/{decks[r.task_id][0].png}"
        for r in run.rollouts[:PAGE]  # a sample: the table's first page (a run of 10,000 is not 10,000 thumbnails)
        if decks[r.task_id] and decks[r.task_id][0].png
    }
    thumbs, stats = make_thumbnails(run.root, out / "thumbs", firsts.values())
    covers = {task_id: thumbs[source] for task_id, source in firsts.items() if source in thumbs}
    verdicts: dict[str, list[Verdict]] = defaultdict(list)
    for v in run.verdicts or ():
        verdicts[v.task_id].append(v)
    rows = {row.task_id: row for row in figures.rows}
    ids = [r.task_id for r in run.rollouts]
    for i, rollout in enumerate(run.rollouts):
        page = _rollout_page(
            run,
            rollout,
            rows[rollout.task_id],
            decks[rollout.task_id],
            verdicts[rollout.task_id],
            ids[i - 1] if i else None,
            ids[i + 1] if i + 1 < len(ids) else None,
        )
        (out / "rollouts" / f"{rollout.task_id}.html").write_text(page, encoding="utf-8")
    (out / ROWS).write_text(_rows_script(figures.rows, covers), encoding="utf-8")  # as the pages: readable by a web server
    index = out / "index.html"
    index.write_text(_index_page(run, figures, covers), encoding="utf-8")
    return Site(index, len(run.rollouts), {task_id: out / thumb for task_id, thumb in covers.items()}, stats)


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


def _rollout_page(
    run: RunData,
    rollout: Rollout,
    row: RolloutRow,
    deck: list[DeckSlide],
    verdicts: list[Verdict],
    previous: str | None,
    following: str | None,
) -> str:
    trajectories, broken = _trajectories(run.reader, rollout)
    order = {gate: i for i, gate in enumerate((ENVIRONMENT, *run.gates))}
    return _render(
        "rollout.html.j2",
        root="../",
        title=f"Rollout {rollout.task_id}",
        rollout=rollout,
        row=row,
        task=run.tasks.get(rollout.task_id),
        ws=f"../../{run.workspace(rollout)}",
        slides=deck,
        pptx=run.pptx.get(rollout.task_id),
        trajectories=trajectories,
        broken=broken,
        verdicts=sorted(verdicts, key=lambda v: order.get(v.gate, len(order))),
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
