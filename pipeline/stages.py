"""How the entry points that run stages (`pipeline.synthesize`, `eval.run`) run them, and their contract.

A stage is a function of the run (`RunContext`) that returns its figures; an entry point
runs an ordered mapping of them (its recipe), or the part of it `stages=[...]` names.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable, Mapping, Sequence

from omegaconf import DictConfig

from core.cli import CommandError, Failed, Stopped, main_prog, report
from core.config import ConfigError
from core.llm.local_server import serving
from core.run.context import RunContext, open_run
from pipeline.spending import publish_usage

StageFn = Callable[[RunContext], dict[str, Any]]

log = logging.getLogger(__name__)


class EmptyStage(Failed, RuntimeError):
    """A stage received nothing to work on: everything upstream was dropped or failed."""


def require_input(ctx: RunContext, stage_name: str, received: int, what: str, why: str) -> None:
    """Stop the run when `stage_name` receives no `what` (`why`: the upstream counts and where the reasons are),
    unless `run.allow_empty=true`, which logs it and goes on."""
    if received:
        return
    message = f"stage {stage_name} received 0 {what}: {why}"
    if ctx.cfg.run.allow_empty:
        log.warning("%s (run.allow_empty=true: going on)", message)
        return
    raise EmptyStage(f"{message} (run.allow_empty=true goes on regardless)")


def chosen(recipe: Mapping[str, StageFn], names: Sequence[str] | None) -> dict[str, StageFn]:
    """The stages of `recipe` that `names` picks (None: all), in the recipe's order."""
    if names is None:
        return dict(recipe)
    unknown = [n for n in names if n not in recipe]
    if unknown:
        raise ConfigError(f"stages={list(names)}: unknown {unknown}; known: {list(recipe)}")
    return {name: fn for name, fn in recipe.items() if name in names}


def run_stages(
    cfg: DictConfig,
    recipe: Mapping[str, StageFn],
    job_type: str,
    validate: Callable[[DictConfig], None],
    names: Sequence[str] | None = None,
) -> None:
    """Validate, open the run, then run the stages of `recipe` that `names` picks (None: all), in order,
    rewriting stats/usage.json after each, and sealing the units they wrote when they end. Exits as every command does (core.cli): 2 for bad input (a config
    error, also one a stage finds as it starts), 1 for a stage that received nothing, 3 when the run's spending
    cap stopped a stage; each with one line on stderr."""
    prog = main_prog(job_type)
    try:
        validate(cfg)
        stages = chosen(recipe, names)
        ctx = open_run(cfg, job_type=job_type)
    except CommandError as exc:
        sys.exit(report(prog, exc))
    try:
        with serving(ctx.cfg, ctx.store.path("logs")):  # llm=local: the model servers live as long as the stages
            for name, run in stages.items():
                figures = run(ctx)
                ctx.tracker.log({f"{name}/{k}": v for k, v in figures.items() if isinstance(v, (int, float))})
                log.info("stage %s: %s", name, figures)
                publish_usage(ctx.store.root)
    except CommandError as exc:  # e.g. a worker on a node that cannot run the commands' jail, a missing model file
        log.log(logging.WARNING if isinstance(exc, Stopped) else logging.ERROR, "%s", exc)
        sys.exit(report(prog, exc))
    finally:
        ctx.store.seal_all()  # a stage's unit files as one shard: a rerun reads a few shards, not a file per unit
        publish_usage(ctx.store.root, ctx.tracker)
        ctx.close()
