"""Rollouts on embedded Ray: exactly once, resume, worker death, timeouts, early stop."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from core.cli import InputError
from core.records import Rollout, StageDone, read_parquet
from core.run.ledger import BudgetExhausted, read_ledger
from pipeline.rollouts import RunAborted, run_rollouts
from pipeline.worker_process import bound_threads
from tests.pipeline.helpers import RUNNER, write_tasks

FAST = ["ray.num_workers=2", "ray.rollouts_per_worker=4", "ray.num_cpus_per_worker=0.5", RUNNER, "rollouts.max_wall_s=3"]


pytestmark = pytest.mark.usefixtures("embedded_ray")


def rollouts(ctx) -> dict[str, Rollout]:
    return {r.task_id: r for r in read_parquet(ctx.store.root / "rollouts.parquet", Rollout)}


def test_every_task_once_and_a_rerun_plays_nothing(make_run) -> None:
    ctx = make_run(*FAST, "rollouts.max_cost_usd=0.5")
    write_tasks(ctx, ["ok"] * 12)
    figures = run_rollouts(ctx)
    assert (figures["played"], figures["done"], figures["failed"]) == (12, 12, 0)
    assert set(rollouts(ctx)) == {f"t{i:02d}" for i in range(12)}
    assert all(r.usage["agent"].calls == 1 for r in rollouts(ctx).values())  # each rollout's calls, counted in its worker
    assert {trace(ctx, i)["cap"] for i in range(12)} == {"0.5"}  # each rollout plays as a unit capped at rollouts.max_cost_usd
    assert run_rollouts(make_run(*FAST, "rollouts.max_cost_usd=0.5"))["played"] == 0


def test_per_task_plays_each_task_n_times_each_rollout_a_unit_that_resumes(make_run) -> None:
    ctx = make_run(*FAST, "rollouts.per_task=3", "limit=2")
    write_tasks(ctx, ["ok", "FAIL", "ok"])
    (ctx.store.root / "rollouts.parquet").unlink(missing_ok=True)
    ctx.store.commit("rollouts", "t00~1", Rollout(task_id="t00~1", status="done"))  # one finished before a crash
    figures = run_rollouts(ctx)
    assert (figures["played"], figures["per_task"]) == (5, 3)
    played = rollouts(ctx)
    assert set(played) == {"t00", "t00~1", "t00~2", "t01", "t01~1", "t01~2"}
    assert {k for k, r in played.items() if r.status == "failed"} == {"t01", "t01~1", "t01~2"}  # the task, each rollout
    assert (ctx.store.root / "rollouts" / "t00~2" / "trace.txt").is_file() and not (
        ctx.store.root / "rollouts" / "t00~1"
    ).exists()
    assert run_rollouts(make_run(*FAST, "rollouts.per_task=3", "limit=2"))["played"] == 0


def test_per_task_refuses_task_ids_that_look_like_rollout_keys(make_run) -> None:
    ctx = make_run(*FAST, "rollouts.per_task=2")
    write_tasks(ctx, ["ok"], ids=["a~1"])
    with pytest.raises(InputError, match=r"a~1.*rollouts.per_task"):
        run_rollouts(ctx)


def trace(ctx, i: int) -> dict[str, str]:
    """What the fake runner noted while playing task `i`."""
    return dict(line.split(" ", 1) for line in (ctx.store.root / "rollouts" / f"t{i:02d}" / "trace.txt").read_text().splitlines())


def step_threads(ctx, count: int) -> list[tuple[str, str]]:
    """(thread of the rollout's CPU-bound step, thread of its event loop) per rollout, from the fake runner's traces."""
    return [(trace(ctx, i)["thread"], trace(ctx, i)["loop"]) for i in range(count)]


def test_cpu_bound_steps_run_on_the_workers_bounded_threads(make_run) -> None:
    ctx = make_run(*FAST, "ray.threads_per_worker=2")
    write_tasks(ctx, ["ok"] * 8)
    run_rollouts(ctx)
    threads = {step for step, _ in step_threads(ctx, 8)}
    assert threads and threads <= {"rollout-cpu_0", "rollout-cpu_1"}


def test_cpu_bound_steps_run_on_the_event_loop_by_default(make_run) -> None:
    ctx = make_run(*FAST)
    write_tasks(ctx, ["ok"] * 4)
    run_rollouts(ctx)
    pairs = step_threads(ctx, 4)
    assert all(step == loop for step, loop in pairs), pairs


def test_steps_on_the_loop_return_and_raise_as_on_a_thread() -> None:
    def fail() -> None:
        raise ValueError("bad slide")

    async def main() -> tuple[str, str]:
        bound_threads(0)
        where = await asyncio.to_thread(lambda: threading.current_thread().name)
        with pytest.raises(ValueError, match="bad slide"):
            await asyncio.to_thread(fail)
        return where, threading.current_thread().name

    where, loop = asyncio.run(main())
    assert where == loop


def test_name_lookups_still_get_a_thread() -> None:
    """A slow DNS server must not stall the worker's loop: `loop.getaddrinfo` goes to a thread."""

    async def main() -> list[str]:
        bound_threads(0)
        assert await asyncio.get_running_loop().getaddrinfo("localhost", 80)
        return [thread.name for thread in threading.enumerate()]

    assert any(name.startswith("rollout-lookup") for name in asyncio.run(main()))


def test_failures_are_accounted_and_never_stop_the_run(make_run) -> None:
    ctx = make_run(*FAST)
    write_tasks(ctx, ["ok", "CRASH", "SLOW", "FAIL", "ok", "DIE"])
    figures = run_rollouts(ctx)
    got = rollouts(ctx)
    assert len(got) == 6 and figures["resubmitted"] >= 1
    assert got["t01"].failure == "environment/infrastructure:RuntimeError"
    assert got["t02"].failure == "environment/timeout"
    assert got["t03"].failure == "environment/model_error:server"
    assert got["t05"].status == "done" and got["t05"].attempt == 2  # its worker died once, Ray restarted it
    assert [got[t].status for t in ("t00", "t04")] == ["done", "done"]


def test_partial_workspace_is_moved_aside(make_run) -> None:
    ctx = make_run(*FAST)
    write_tasks(ctx, ["ok"])
    stale = ctx.store.root / "rollouts" / "t00"
    stale.mkdir(parents=True)
    (stale / "half-written.html").write_text("<html>")
    run_rollouts(ctx)
    assert not (stale / "half-written.html").exists() and (stale / "trace.txt").exists()
    assert list((ctx.store.root / "rollouts" / ".partial").glob("t00.*/half-written.html"))


def test_early_stop_on_error_rate(make_run) -> None:
    ctx = make_run(
        *FAST, "rollouts.error_window=4", "rollouts.max_error_rate=0.5", "ray.rollouts_per_worker=1", "ray.num_workers=1"
    )
    write_tasks(ctx, ["FAIL"] * 10)
    with pytest.raises(RunAborted, match="4 of the last 4 rollouts failed"):
        run_rollouts(ctx)
    assert 4 <= len(ctx.store.done("rollouts")) < 10


@pytest.mark.parametrize("ramp_up_s, least, most", [(0.0, 0.0, 0.5), (1.2, 0.8, 1.6)])
def test_ramp_up_spreads_the_first_wave(make_run, ramp_up_s: float, least: float, most: float) -> None:
    ctx = make_run(*FAST, f"ray.ramp_up_s={ramp_up_s}")
    write_tasks(ctx, ["ok"] * 4)  # fewer than the 8 slots: the wave is these 4, starting 0.3 s apart
    run_rollouts(ctx)
    starts = [float(trace(ctx, i)["started"]) for i in range(4)]
    assert least <= max(starts) - min(starts) <= most


def test_the_run_s_cost_cap_stops_the_stage_and_a_higher_cap_finishes_the_rest(make_run) -> None:
    """Each fake rollout costs $0.001; one in flight, so the stage stops within one rollout's cost of the cap."""
    one_at_a_time = [RUNNER, "ray.num_workers=1", "ray.rollouts_per_worker=1", "ray.num_cpus_per_worker=0.5"]
    ctx = make_run(*one_at_a_time, "run.max_cost_usd=0.0035")
    write_tasks(ctx, ["ok"] * 8)
    with pytest.raises(BudgetExhausted, match=r"stage rollouts stopped: run.max_cost_usd=0.0035 reached: \$0.0040 spent") as stop:
        run_rollouts(ctx)
    assert "4 unit(s) not finished" in str(stop.value) and "rerun" in str(stop.value)
    first = {p.stem for p in (ctx.store.root / "units" / "rollouts").glob("*.json")}
    assert len(first) == 4 and read_ledger(ctx.store.root).total().cost == pytest.approx(0.004)
    figures = run_rollouts(make_run(*one_at_a_time, "run.max_cost_usd=1"))
    assert figures["played"] == 4 and len(rollouts(ctx)) == 8  # the rest, none of the first four again
    assert all(r.attempt == 1 for r in rollouts(ctx).values()) and read_ledger(ctx.store.root).total().calls == 8
    projection = json.loads((ctx.store.root / "stats" / "projection.json").read_text())
    assert (projection["finished"], projection["per_rollout_cost_usd"], projection["projected_cost_usd"]) == (
        4,
        0.001,
        pytest.approx(0.008),
    )


def test_a_limit_pilot_projects_the_cost_of_the_stage_without_limit(make_run) -> None:
    """The pilot's tasks stage wrote 4 of tasks.count=20 drafts: the full stage has 5 times its 4 train tasks."""
    ctx = make_run(*FAST, "limit=2", "tasks.count=20", "tasks.eval_size=2")
    write_tasks(ctx, ["ok"] * 4)
    ctx.store.commit(
        "stages", "tasks", StageDone(stage="tasks", figures_json=json.dumps({"written": 4, "train": 4, "limited": True}))
    )
    run_rollouts(ctx)
    projection = json.loads((ctx.store.root / "stats" / "projection.json").read_text())
    assert (projection["tasks"], projection["finished"], projection["to_play"]) == (20, 2, 18)
    assert projection["projected_cost_usd"] == pytest.approx(0.02)  # $0.001 a rollout
    assert "$0.02 for the stage's 20 rollouts without limit" in (ctx.store.root / "logs" / "test.log").read_text()
