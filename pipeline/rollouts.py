"""Stage 2, rollouts: every task played by a runner inside async Ray actors.

Each worker actor holds one runner (a renderer, model clients) and plays many
rollouts at once (they mostly wait on the model). The driver feeds tasks with
back-pressure (`ray.wait`), resubmits the rollouts of a worker that died (Ray
restarts the actor), and stops early when too many recent rollouts fail. A
worker publishes each finished rollout through the run store exactly once, so a
resubmitted or ghost rollout can never write twice. A rerun skips finished
rollouts; the workspace of one that was in flight is moved aside.

Each rollout is a unit (core.run.metering): its record carries every model call it made, so
the ledger counts it once. Before the stage plays anything it logs the projected cost
(pipeline.spending); once the run's spending cap is reached no rollout starts, those in
flight finish or are cancelled (`run.budget_in_flight`), and the stage stops with one line.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import shutil
import time
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, RayTaskError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agents.jail import describe
from core.cli import InputError
from core.config import PROJECT_ROOT, ConfigError, RayConfig
from core.failures import Failure
from core.llm.fleet import share
from core.logs import console, setup_logging
from core.protocols import Runner
from core.records import REPLICA_MARK, Rollout, RolloutStatus, Task, rollout_id
from core.run.context import RunContext
from core.run.ledger import SpendingCap, spending_cap
from core.run.metering import Unit, stamped, unit_scope
from core.run.reader import RunReader
from core.run.store import RunStore, UnitExists
from pipeline.fleet_admission import RemoteAdmission, fleet_actor, start_fleet_actor
from pipeline.rollout_stats import publish, summarize
from pipeline.spending import project_rollouts
from pipeline.stages import require_input
from pipeline.worker_process import bound_threads, settle_gc

log = logging.getLogger(__name__)

STAGE = "rollouts"
WORKER_LOST = (RayActorError, ActorDiedError, ActorUnavailableError)
RESTART_WAIT_S = 5.0


class RunAborted(RuntimeError):
    """The run stopped early (error rate over the window); finished rollouts are kept."""


def load_runner(path: str, cfg: Any, run_dir: Path) -> Runner:
    """Instantiate `module:Class` with (cfg, run_dir)."""
    module_name, _, attr = path.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"rollouts.runner={path!r} cannot be imported: {exc}") from exc
    return cls(cfg, run_dir)


def workspace_for(run_dir: Path, task_id: str) -> Path:
    return run_dir / STAGE / task_id


def set_aside(workspace: Path) -> Path | None:
    """Move a partial workspace (left by a crash) out of the way; never mix it into a new attempt."""
    if not workspace.exists():
        return None
    target = workspace.parent / ".partial" / f"{workspace.name}.{time.strftime('%Y%m%d-%H%M%S')}.{os.getpid()}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(workspace), target)
    return target


@ray.remote
class RolloutWorker:
    """An async actor: one runner, many rollouts in flight."""

    def __init__(self, cfg: Any, run_dir: str, fleet_name: str):
        self.cfg = cfg
        self.store = RunStore(Path(run_dir))
        setup_logging(self.store.root / "logs" / f"worker-{os.getpid()}.log")  # beside the driver's log, not in Ray's
        holder = ray.get_runtime_context().get_actor_id()  # the same when Ray restarts this worker
        fleet = fleet_actor(fleet_name)
        fleet.forget.remote(holder)  # slots a dead incarnation of this worker held
        share(RemoteAdmission(fleet), holder)  # every model call of the worker takes its slot from the run's one view
        self.runner = load_runner(cfg.rollouts.runner, cfg, self.store.root)
        self._started = False
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Start the runner (browser, clients); `play` does it too, for a worker Ray restarted."""
        async with self._lock:
            if not self._started:
                bound_threads(self.cfg.ray.threads_per_worker)
                await self.runner.start()
                settle_gc()
                self._started = True

    async def play(self, task_json: str, attempt: int) -> str:
        """Play one task and publish its Rollout; returns the published record as JSON."""
        task = Task.from_json(task_json)
        if self.store.is_done(STAGE, task.task_id):
            return self.store.load_unit(STAGE, task.task_id, Rollout).to_json()
        await self.start()
        workspace = workspace_for(self.store.root, task.task_id)
        set_aside(workspace)
        workspace.mkdir(parents=True)
        started = time.monotonic()
        unit = Unit(max_cost_usd=self.cfg.rollouts.max_cost_usd, key=task.task_id)  # the replica it sticks to
        try:
            with unit_scope(unit):
                rollout = await asyncio.wait_for(self.runner.rollout(task, workspace), self.cfg.rollouts.max_wall_s)
        except asyncio.TimeoutError:
            rollout = Rollout(task_id=task.task_id, status=RolloutStatus.failed, failure=Failure.timeout)
        except Exception as exc:  # noqa: BLE001 - one bad task never kills a run: it becomes a failed rollout
            log.exception("rollout %s crashed", task.task_id)
            rollout = Rollout(
                task_id=task.task_id, status=RolloutStatus.failed, failure=Failure.infrastructure.detailed(type(exc).__name__)
            )
        except BaseException:  # cancelled (the run's spending cap): no record, what it spent is kept
            self.store.spent_unfinished(STAGE, task.task_id, unit.usage(), "cancelled")
            raise
        rollout = _finish(stamped(rollout, unit), attempt, time.monotonic() - started)
        try:
            self.store.commit(STAGE, task.task_id, rollout)
        except UnitExists:  # a ghost of an earlier attempt finished first: keep its record (and what this one spent)
            self.store.spent_unfinished(STAGE, task.task_id, unit.usage(), "published by another attempt")
            return self.store.load_unit(STAGE, task.task_id, Rollout).to_json()
        return rollout.to_json()

    def pid(self) -> int:
        return os.getpid()

    async def close(self) -> None:
        if self._started:
            await self.runner.close()


def _finish(rollout: Rollout, attempt: int, wall_s: float) -> Rollout:
    """The attempt and wall time."""
    return replace(rollout, attempt=attempt, wall_s=rollout.wall_s or wall_s)


def init_ray(cfg: RayConfig) -> None:
    """Join RAY_ADDRESS / `ray.address`, else start an embedded instance; workers import our code."""
    if ray.is_initialized():
        return
    if not (cfg.address or os.environ.get("RAY_ADDRESS")):
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an embedded, single-user instance
        # No idle task workers prestarted (one per CPU): ours are actors, and each idle one polls (~8 ms/s of CPU).
        os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}}
    ray.init(
        # "local": a new instance, never one that another run on this machine started (ray.init(address=None) joins it)
        address=cfg.address or os.environ.get("RAY_ADDRESS") or "local",
        include_dashboard=cfg.include_dashboard,
        runtime_env=runtime_env,
        log_to_driver=False,
        configure_logging=False,
    )


@dataclass
class Feed:
    """The driver's tally of one stage: the recent outcomes (error window), failures by category,
    rollouts resubmitted after a lost worker, and the rollouts finished."""

    window: deque = field(default_factory=deque)
    failures: Counter = field(default_factory=Counter)
    resubmitted: int = 0
    finished: list[Rollout] = field(default_factory=list)


def roll_out(ctx: RunContext, tasks: list[Task], cap: SpendingCap | None = None) -> Feed:
    """Play `tasks` on Ray workers; returns the driver's tally (the store holds the records).

    Once `cap` is reached no rollout starts (the driver learns a rollout's cost when it finishes, so
    the rollouts in flight may spend past it, each up to its own cost); BudgetExhausted then."""
    cfg = ctx.cfg
    init_ray(cfg.ray)
    fleet, fleet_name = start_fleet_actor()
    workers = [
        RolloutWorker.options(  # type: ignore[attr-defined]  # @ray.remote made it an ActorClass; mypy keeps the class
            max_concurrency=cfg.ray.rollouts_per_worker,
            max_restarts=cfg.ray.max_worker_restarts,
            num_cpus=cfg.ray.num_cpus_per_worker,
        ).remote(cfg, str(ctx.store.root), fleet_name)
        for _ in range(cfg.ray.num_workers)
    ]
    capacity = cfg.ray.num_workers * cfg.ray.rollouts_per_worker
    queue = deque((t, 1) for t in tasks)
    in_flight: dict[ray.ObjectRef, tuple[Task, int, int]] = {}
    feed = Feed(window=deque(maxlen=cfg.rollouts.error_window))
    next_worker = submitted = 0
    restarting_until = [0.0] * len(workers)  # a worker that just lost rollouts gets no new ones for a moment
    columns = (TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[note]}"))
    try:
        _start(workers)
        ramp = _Ramp(time.monotonic(), cfg.ray.ramp_up_s, min(capacity, len(tasks)))
        with Progress(*columns, console=console, transient=False) as progress:
            bar = progress.add_task("rollouts", total=len(tasks), note="")
            while queue or in_flight:
                if cap is not None and (queue or (cap.cancel and in_flight)) and cap.reached():
                    _hold_back(cap, queue, in_flight)
                while queue and len(in_flight) < capacity and ramp.wait_s(submitted) == 0:
                    task, attempt = queue.popleft()
                    w = _pick_worker(next_worker, restarting_until)
                    next_worker, submitted = w + 1, submitted + 1
                    in_flight[workers[w].play.remote(task.to_json(), attempt)] = (task, attempt, w)
                pause = ramp.wait_s(submitted) if queue and len(in_flight) < capacity else None
                if not in_flight:
                    time.sleep(pause or 0)
                    continue
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=pause)
                if not ready:
                    continue
                task, attempt, w = in_flight.pop(ready[0])
                try:
                    rollout = Rollout.from_json(ray.get(ready[0]))
                except WORKER_LOST as exc:
                    restarting_until[w] = time.monotonic() + RESTART_WAIT_S
                    lost = _worker_lost(ctx.store, task, attempt, cfg.rollouts.max_attempts, queue, feed, exc)
                    if lost is None:
                        continue
                    rollout = lost
                _tally(feed, rollout)
                if cap is not None:
                    cap.add(rollout.usage)
                progress.update(bar, advance=1, note=_note(feed))
                _check_error_rate(feed, cfg.rollouts.max_error_rate)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=False)
        for worker in workers:
            _close(worker)
        _log_fleet(fleet)
    if cap is not None and cap.held_back:
        raise cap.stop(STAGE)
    return feed


def _hold_back(cap: SpendingCap, queue: deque, in_flight: dict[ray.ObjectRef, Any]) -> None:
    """The cap is reached: nothing queued starts; with run.budget_in_flight=cancel, what runs is cancelled."""
    for _ in range(len(queue)):
        cap.hold_back()
    queue.clear()
    if cap.cancel:  # they stop uncommitted (the worker keeps what they spent) and are played again by the next run
        for ref in list(in_flight):
            ray.cancel(ref, force=False)
            cap.hold_back()
            del in_flight[ref]


def _start(workers: list[Any]) -> None:
    """Start the workers' runners together, before any rollout's clock starts (else the first
    rollouts of each worker wait for its browser). One that dies is started by its first rollout."""
    try:
        ray.get([worker.start.remote() for worker in workers])
    except WORKER_LOST as exc:
        log.warning("a worker died while starting (Ray restarts it): %s", exc)
    except RayTaskError as exc:
        if isinstance(exc.cause, ConfigError):  # e.g. a node that cannot run the commands' jail: one line, not a traceback
            raise exc.cause from None
        raise


@dataclass(frozen=True)
class _Ramp:
    """The first wave's starts spread evenly over `seconds` (`ray.ramp_up_s`).

    Rollouts started together run the same phases together: their first model calls reach
    the endpoint at once, then their renders queue together. Where model latencies vary, a
    run spreads them out by itself within a few steps; where they hardly vary, it never does."""

    started: float
    seconds: float
    wave: int  # rollouts in the first wave

    def wait_s(self, submitted: int) -> float:
        """Seconds until the next rollout (the `submitted`-th, from 0) may start."""
        if submitted >= self.wave or self.seconds <= 0:
            return 0.0
        return max(0.0, self.started + self.seconds * submitted / self.wave - time.monotonic())


def _pick_worker(start: int, restarting_until: list[float]) -> int:
    """Round-robin from `start`, skipping workers that are restarting (unless all are)."""
    now = time.monotonic()
    n = len(restarting_until)
    for k in range(n):
        w = (start + k) % n
        if restarting_until[w] <= now:
            return w
    return start % n


def _worker_lost(
    store: RunStore, task: Task, attempt: int, max_attempts: int, queue: deque, feed: Feed, exc: Exception
) -> Rollout | None:
    """Resubmit a rollout whose worker died (Ray restarts the worker), or give up after `max_attempts`."""
    if store.is_done(STAGE, task.task_id):  # it was published just before the worker died
        return store.load_unit(STAGE, task.task_id, Rollout)
    if attempt < max_attempts:
        log.warning("worker died during %s (attempt %d): resubmitting", task.task_id, attempt)
        queue.append((task, attempt + 1))
        feed.resubmitted += 1
        return None
    rollout = Rollout(task_id=task.task_id, status=RolloutStatus.failed, failure=Failure.worker_died, attempt=attempt)
    try:
        store.commit(STAGE, task.task_id, rollout)
    except UnitExists:
        return store.load_unit(STAGE, task.task_id, Rollout)
    log.error("giving up on %s after %d attempts: %s", task.task_id, attempt, exc)
    return rollout


def _tally(feed: Feed, rollout: Rollout) -> None:
    feed.finished.append(rollout)
    failed = rollout.status != RolloutStatus.done
    feed.window.append(failed)
    if failed:
        feed.failures[rollout.failure or "unknown"] += 1


def _note(feed: Feed) -> str:
    done = sum(r.status == RolloutStatus.done for r in feed.finished)
    return f"done {done} · failed {len(feed.finished) - done}"


def _check_error_rate(feed: Feed, max_rate: float) -> None:
    if len(feed.window) == feed.window.maxlen and sum(feed.window) / len(feed.window) > max_rate:
        common = ", ".join(f"{k} x{v}" for k, v in feed.failures.most_common(3))
        raise RunAborted(
            f"stopping early: {sum(feed.window)} of the last {len(feed.window)} rollouts failed "
            f"(rollouts.max_error_rate={max_rate}); most common: {common}. Finished rollouts are kept; "
            "fix the cause and rerun the same command to continue."
        )


def _log_fleet(fleet: Any) -> None:
    """Each replica's admission at the end of the stage (its limit, peak in flight, refusals), then the actor goes."""
    try:
        for url, state in ray.get(fleet.snapshot.remote(), timeout=30).items():
            log.info("replica %s: %s", url, ", ".join(f"{k} {v}" for k, v in state.items()))
    except (*WORKER_LOST, ray.exceptions.GetTimeoutError) as exc:
        log.warning("could not read the fleet's admission: %s", exc)
    ray.kill(fleet)


def _close(worker: Any) -> None:
    """Close a worker's runner (its browser, its clients)."""
    try:
        ray.get(worker.close.remote(), timeout=60)
    except (*WORKER_LOST, ray.exceptions.GetTimeoutError) as exc:
        log.warning("could not close a worker: %s", exc)


def split_tasks(ctx: RunContext, run: RunReader) -> list[Task]:
    """Every task of the split the stage plays (`limit` not applied)."""
    path = run.path("tasks", f"{ctx.cfg.rollouts.split}.parquet")
    if not path.exists():
        raise InputError(f"{path} is missing: run the tasks stage first (stages=[tasks,rollouts])")
    return run.split(ctx.cfg.rollouts.split)


def replicas(tasks: list[Task], per_task: int) -> list[Task]:
    """Each task `per_task` times, as its rollouts play it: keyed `core.records.rollout_id` (the first under the
    task's own id), so that each is a unit of its own (resumable, judged and exported on its own). Their decks differ
    as sampling makes them differ: the model's temperature, the scripted policy's design (chosen by the key)."""
    marked = [t.task_id for t in tasks if REPLICA_MARK in t.task_id]
    if per_task > 1 and marked:
        raise InputError(
            f"task ids {marked[:3]} contain {REPLICA_MARK!r}, which keys a task's extra rollouts (rollouts.per_task)"
        )
    return [replace(task, task_id=rollout_id(task.task_id, k)) for task in tasks for k in range(per_task)]


def full_size(ctx: RunContext, run: RunReader, split: list[Task]) -> int:
    """How many rollouts the split would take in a run without `limit` (`rollouts.per_task` each): a `limit=N`
    pilot's tasks stage wrote N of `tasks.count` drafts, so its split is scaled up by their ratio."""
    done = run.stage_done("tasks")
    figures = json.loads(done.figures_json) if done else {}
    tasks = (
        round(len(split) * ctx.cfg.tasks.count / figures["written"])
        if figures.get("limited") and figures["written"]
        else len(split)
    )
    return tasks * ctx.cfg.rollouts.per_task


def play(ctx: RunContext, tasks: list[Task], full: int) -> tuple[Feed, list[Rollout], float]:
    """Play those of `tasks` not finished yet, within the run's spending cap; the driver's tally, the tasks' records,
    the seconds it took. The cost of the stage's `full` rollouts (no `limit`) is projected before (and after a pilot)."""
    done = ctx.store.done(STAGE)
    todo = [t for t in tasks if t.task_id not in done]
    log.info("rollouts: %d tasks, %d already finished, %d to play", len(tasks), len(tasks) - len(todo), len(todo))
    cap = spending_cap(ctx.cfg.run, ctx.store.root)
    project_rollouts(ctx.store.root, STAGE, full, cap)
    started = time.monotonic()
    feed = roll_out(ctx, todo, cap) if todo else Feed()
    elapsed = time.monotonic() - started
    ctx.store.compact(STAGE, Rollout)
    if todo:
        project_rollouts(ctx.store.root, STAGE, full, cap)  # a pilot's price of the full stage
    wanted = {t.task_id for t in tasks}
    return feed, [r for r in ctx.store.load(STAGE, Rollout) if r.task_id in wanted], elapsed


def run_rollouts(ctx: RunContext) -> dict[str, Any]:
    run = RunReader(ctx.store.root)
    split = split_tasks(ctx, run)
    chosen = split[: ctx.cfg.limit] if ctx.cfg.limit else split
    why = f"the tasks stage kept none for split {ctx.cfg.rollouts.split}; reasons in {ctx.store.path('tasks', 'stats.md')}"
    require_input(ctx, STAGE, len(chosen), "tasks", why)
    tasks = replicas(chosen, ctx.cfg.rollouts.per_task)
    feed, records, elapsed = play(ctx, tasks, full_size(ctx, run, split))
    stats = summarize(
        records, len(tasks), len(feed.finished), elapsed, str(ctx.cfg.critic.mode.value), describe(ctx.cfg.tools.sandbox)
    )
    publish(ctx, stats | {"resubmitted": feed.resubmitted}, records)
    keys = ("tasks", "played", "done", "failed", "yield", "rollouts_per_hour", "cost_usd", "injections")
    return {k: stats[k] for k in keys} | {"resubmitted": feed.resubmitted, "per_task": ctx.cfg.rollouts.per_task}
