"""Stage 3, filters: one verdict per gate per finished rollout, then the failure report.

    python -m filters.run RUN_DIR [KEY=VALUE ...]
    python -m filters.run runs/demo filters.gates=[constraint,quality] roles.quality_judge.base_url=http://gpu:8000/v1

Reads the filters, llm and roles sections of RUN_DIR/config.yaml (KEY=VALUE overrides
win), the tasks (tasks/*.parquet) and rollouts.parquet. A failed rollout gets one
`environment` verdict from its failure and no gate runs; every finished one goes through
each gate of `filters.gates` (see filters.registry.GATES): the rule gates first (constraint,
content), then the model judges, which a rollout a rule gate rejected never reaches
(no judge tokens spent on it; its judge verdicts stay missing). Each verdict is published once
as units/verdicts/<task_id>__<gate>.json, so a rerun judges only what is missing; a judge
that fails leaves its verdict missing (undecided) for the next run. Each verdict carries the
judge's usage and what made it (templates, model; rule gates say "rules"); once the run's
spending cap (`run.max_cost_usd`, `run.max_tokens` in config.yaml) is reached no judge call
starts. Then verdicts.parquet and RUN_DIR/filters/{failures.md, failures.png, defects.png}.
Accepted, rejected and undecided are filters.acceptance's; `filters.gates=[]` keeps every
finished rollout.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from core.cli import InputError, OneLineParser, run_command
from core.config import ConfigError, LLMConfig, RoleConfig, RunConfig
from core.iterate import batched
from core.llm.json_reply import JSONReplyError
from core.llm.local_server import serving
from core.llm.players import Players
from core.llm.results import ModelError
from core.logs import setup_logging
from core.protocols import Gate, Play
from core.records import ArtifactError, ModelUse, Rollout, RolloutStatus, Task, Verdict, task_of, verdict_unit
from core.run.ledger import play_unit, spending_cap
from core.run.metering import note_model
from core.run.reader import RunReader
from core.seams.candidate import Candidate
from filters.acceptance import ENVIRONMENT, UNDECIDED
from filters.config import FiltersConfig, validate_filters
from filters.gates import GateSpec, environment_verdict
from filters.registry import GATES
from filters.report import write_report

log = logging.getLogger(__name__)

STAGE = "verdicts"
BATCH = 512  # rollouts judged at once (each judge call also waits for one of filters.max_concurrency slots)
TASK_BATCH = 2048  # rollouts whose tasks are read at once (~20 MB of tasks)
FAILED_ROLLOUT = ModelUse("environment rules", "rules")  # what makes the verdict of a rollout that did not finish


@dataclass
class FilterRunConfig:
    """The parts of a run's config the filters read."""

    filters: FiltersConfig = field(default_factory=FiltersConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    roles: dict[str, RoleConfig] = field(default_factory=dict)
    run: RunConfig = field(default_factory=RunConfig)  # its spending caps


class RunIncomplete(InputError):
    """The run directory lacks what the filters read (tasks, rollouts)."""


def load_config(run: RunReader, overrides: Sequence[str] = ()) -> FilterRunConfig:
    """The run's filters, llm, roles and run config (defaults where absent), then `overrides`."""
    try:
        merged = OmegaConf.merge(
            OmegaConf.structured(FilterRunConfig),
            {k: v for k, v in run.config().items() if k in ("filters", "llm", "roles", "run")},
            OmegaConf.from_dotlist(list(overrides)),
        )
        cfg = OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"{run.path('config.yaml')}: {exc}".replace("\n", "; ")) from exc
    assert isinstance(cfg, FilterRunConfig)
    validate_filters(cfg.filters)
    check_gates(cfg.filters.gates)
    return cfg


def check_gates(names: Sequence[str]) -> None:
    """Every gate `filters.gates` names is registered (filters.registry.GATES); ConfigError naming the unknown."""
    unknown = [g for g in names if g not in GATES]
    if unknown:
        raise ConfigError(f"filters.gates={list(names)}: unknown {unknown}; registered: {list(GATES)}")


def check_inputs(run: RunReader) -> None:
    """RunIncomplete before the rollouts stage has finished, or when a rollout's task is not in the run's splits
    (ids only: the records are read in batches as they are judged)."""
    if not run.path("rollouts.parquet").is_file():
        raise RunIncomplete(f"{run.path('rollouts.parquet')} is missing: run the rollouts stage first")
    known = run.task_ids()
    orphans = sorted(key for key in run.store.done("rollouts") if task_of(key) not in known)
    if orphans:
        raise RunIncomplete(f"rollouts of unknown tasks (not in {run.path('tasks')}/*.parquet): {orphans[:5]}")


def rollout_batches(run: RunReader) -> Iterator[tuple[dict[str, Task], tuple[Rollout, ...]]]:
    """The finished rollouts, `BATCH` at a time, each batch with its tasks (read `TASK_BATCH` at a time: a task
    file's rows are in split order, not id order, so a read decodes most of its row groups): memory does not grow
    with the run."""
    for rollouts in batched(run.iter_rollouts(), TASK_BATCH):
        tasks = run.tasks_of(r.task_id for r in rollouts)
        yield from ((tasks, batch) for batch in batched(rollouts, BATCH))


@dataclass(frozen=True)
class BuiltGate:
    gate: Gate
    role: str  # the judge role, or the rule gate's name
    maker: ModelUse  # what every verdict of the gate names as its model


async def build_gates(names: Sequence[str], cfg: FilterRunConfig, players: Players) -> dict[str, BuiltGate]:
    """The named gates, a judge gate played as its role's backend says; endpoints are checked first."""
    gates = {name: _built(GATES[name], cfg.filters, players) for name in names}
    await players.check()  # reachable endpoints before any judging
    return gates


def _built(spec: GateSpec, cfg: FiltersConfig, players: Players) -> BuiltGate:
    if spec.build is not None:
        return BuiltGate(spec.build(cfg), spec.name, ModelUse(f"{spec.name} rules", "rules"))
    assert spec.role is not None and spec.players is not None  # a judge gate (GateSpec checks)
    role, how = spec.role, spec.players(cfg)
    return players.play(
        role,
        Play(
            lambda client: BuiltGate(how.by_model(client), role, client.use),
            lambda endpoint: BuiltGate(how.stand_in(endpoint), role, ModelUse(f"scripted {spec.name} judge", "scripted")),
        ),
    )


async def _verdict(built: BuiltGate, candidate: Candidate) -> Verdict:
    note_model(built.role, built.maker)
    try:
        return await built.gate.judge(candidate)
    except ArtifactError as exc:
        return environment_verdict(candidate.task.task_id, built.gate.name, str(exc))


async def judge_rollouts(run: RunReader, cfg: FilterRunConfig) -> dict[str, Any]:
    """Each rollout's missing verdicts: rule gates first; a rollout a rule gate rejects gets no judge call."""
    validate_filters(cfg.filters)
    check_gates(cfg.filters.gates)
    store = run.store
    check_inputs(run)
    names = list(cfg.filters.gates)
    committed = {unit: verdict.passed for unit, verdict in store.iter_units(STAGE, Verdict)}  # a verdict's id: passed

    def todo(rollout: Rollout) -> list[str]:
        gates = [ENVIRONMENT] if rollout.status != RolloutStatus.done else names
        return [g for g in gates if verdict_unit(rollout.task_id, g) not in committed]

    needed = {g for r in run.iter_rollouts() for g in todo(r)}  # a judge with nothing to judge is not built
    slots = asyncio.Semaphore(cfg.filters.max_concurrency)
    undecided: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    wanted = 0  # verdicts this run set out to make
    cap = spending_cap(cfg.run, store.root)

    async def judged(gates: dict[str, BuiltGate], task: Task, rollout: Rollout, gate_name: str) -> Verdict | None:
        if gate_name == ENVIRONMENT:
            note_model(ENVIRONMENT, FAILED_ROLLOUT)
            return environment_verdict(rollout.task_id, ENVIRONMENT, rollout.failure or "the rollout failed")
        async with slots:
            try:
                return await _verdict(gates[gate_name], Candidate(task, rollout, run))
            except (ModelError, JSONReplyError) as exc:
                undecided[gate_name] += 1
                log.warning("%s: the %s judge gave no verdict (left for a rerun): %s", rollout.task_id, gate_name, exc)
                return None

    async def one(gates: dict[str, BuiltGate], task: Task, rollout: Rollout, gate_name: str) -> Verdict | None:
        unit_cap = cap if gate_name != ENVIRONMENT and GATES[gate_name].role is not None else None  # rules spend nothing
        return await play_unit(
            store, STAGE, verdict_unit(rollout.task_id, gate_name), lambda: judged(gates, task, rollout, gate_name), unit_cap
        )

    async def rollout_verdicts(gates: dict[str, BuiltGate], task: Task, rollout: Rollout) -> None:
        nonlocal wanted
        pending = todo(rollout)
        wanted += len(pending)
        judges = [g for g in pending if g != ENVIRONMENT and GATES[g].role is not None]
        made = await asyncio.gather(*(one(gates, task, rollout, g) for g in pending if g not in judges))
        rules = [v.passed for v in made if v is not None]
        rules += [
            committed[verdict_unit(rollout.task_id, g)]
            for g in names
            if GATES[g].role is None and verdict_unit(rollout.task_id, g) in committed
        ]
        if not all(rules):
            skipped.update(judges)  # rejected already: no judge tokens spent on it
            return
        await asyncio.gather(*(one(gates, task, rollout, g) for g in judges))

    async with Players(cfg.llm, cfg.roles) as players:
        gates = await build_gates([g for g in names if g in needed], cfg, players)
        for tasks, batch in rollout_batches(run):  # a bounded number in flight
            await asyncio.gather(*(rollout_verdicts(gates, tasks[r.task_id], r) for r in batch))
    held_back = cap.held_back if cap is not None else 0
    written = wanted - sum(undecided.values()) - sum(skipped.values()) - held_back
    figures = _summarise(run, names, written, undecided, skipped)
    if held_back:
        assert cap is not None
        raise cap.stop("filters")
    return figures


def _summarise(run: RunReader, gates: list[str], judged: int, undecided: Counter[str], skipped: Counter[str]) -> dict[str, Any]:
    store = run.store
    store.compact(STAGE, Verdict)
    ids = store.done("rollouts")
    verdicts = (v for v in run.iter_verdicts() if v.task_id in ids)
    categories = write_report(run, run.iter_rollouts(), verdicts, gates).outcomes.copy()
    figures: dict[str, Any] = {
        "rollouts": sum(categories.values()),
        "accepted": categories.pop(None, 0),
        "undecided": categories.pop(UNDECIDED, 0),
        "rejected": sum(categories.values()),
        "verdicts_written": judged,
    }
    figures |= {f"rejected_{category}": n for category, n in sorted(categories.items())}
    figures |= {f"judge_failures_{gate}": n for gate, n in sorted(undecided.items())}
    figures |= {f"judge_calls_skipped_{gate}": n for gate, n in sorted(skipped.items())}
    log.info("filters: %s (report in %s)", figures, store.path("filters", "failures.md"))
    return figures


# ---------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m filters.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="the run directory (holds config.yaml, tasks/, rollouts.parquet)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, e.g. filters.gates=[constraint]")
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: filter_run(args.run_dir, args.overrides))


def filter_run(run_dir: Path, overrides: Sequence[str]) -> int:
    run = RunReader.open(run_dir)
    cfg = load_config(run, overrides)
    setup_logging(run.path("logs", "filters.log"))
    with serving(cfg, run.path("logs")):
        figures = asyncio.run(judge_rollouts(run, cfg))
    print(run.path("filters", "failures.md").read_text(encoding="utf-8"))
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
