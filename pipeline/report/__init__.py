"""The run report: a static site (report/index.html, a page per rollout) and the same figures on wandb.

    python -m pipeline.report RUN_DIR

Also the `report` stage of `python -m pipeline.synthesize` (its recipe, pipeline/synthesize.py).
"""

from pipeline.report.stage import make_report, run_report

__all__ = ["make_report", "run_report"]
