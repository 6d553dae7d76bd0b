"""Build the report of a run: figures once, then the static site and the dashboard from them."""

from __future__ import annotations

import logging
import time
from typing import Any

from core.run.context import RunContext
from core.run.reader import RunReader
from core.run.tracking import Tracker
from pipeline.report.data import load_run
from pipeline.report.figures import compute_figures
from pipeline.report.site import RolloutPages, write_site
from pipeline.report.track import track

log = logging.getLogger(__name__)


def make_report(reader: RunReader, tracker: Tracker | None = None) -> dict[str, Any]:
    """Write the run's report/ (and track the figures when given a tracker); returns what the build did."""
    started = time.perf_counter()
    run = load_run(reader)
    pages = RolloutPages(run)
    figures = compute_figures(run, pages.add)
    pages.close()
    site = write_site(run, figures, pages)
    if tracker is not None:
        track(tracker, figures, site.covers)
    seconds = time.perf_counter() - started
    log.info("report: %s (%d rollout pages, %.1f s)", site.index, site.pages, seconds)
    return {
        "rollouts": len(figures.rows),
        "pages": site.pages,
        "thumbs_made": site.thumb_stats.made,
        "thumbs_reused": site.thumb_stats.reused,
        "thumbs_failed": site.thumb_stats.failed,
        "seconds": round(seconds, 2),
    }


def run_report(ctx: RunContext) -> dict[str, Any]:
    return make_report(RunReader(ctx.store.root), ctx.tracker)
