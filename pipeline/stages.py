"""The stage registry of `pipeline.synthesize` and the runner shared by its entry points."""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable, Sequence

from omegaconf import DictConfig

from core.config import ConfigError
from core.run import RunContext, open_run
from core.store import ConfigMismatch

StageFn = Callable[[RunContext], dict[str, Any]]
REGISTRY: dict[str, StageFn] = {}

log = logging.getLogger(__name__)


def stage(name: str) -> Callable[[StageFn], StageFn]:
    def register(fn: StageFn) -> StageFn:
        REGISTRY[name] = fn
        return fn

    return register


def run_stages(cfg: DictConfig, names: Sequence[str], job_type: str, validate: Callable[[DictConfig], None]) -> None:
    """Validate, open the run, then run `names` in order; config errors (also those a stage finds
    as it starts) exit 2 with one line."""
    try:
        validate(cfg)
        ctx = open_run(cfg, job_type=job_type)
    except (ConfigError, ConfigMismatch) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        for name in names:
            figures = REGISTRY[name](ctx)
            ctx.tracker.log({f"{name}/{k}": v for k, v in figures.items() if isinstance(v, (int, float))})
            log.info("stage %s: %s", name, figures)
    except ConfigError as exc:  # found as a stage starts, e.g. by a worker on a node that cannot run the commands' jail
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    finally:
        ctx.close()
