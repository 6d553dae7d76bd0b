"""Rollouts on a simulated multi-node Ray cluster: a node is removed mid-run; two workers share a replica's limit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from core.config import PROJECT_ROOT
from core.records import Rollout, read_parquet
from fakes.openai_server import FakeOpenAIServer, Reply
from pipeline.rollouts import run_rollouts
from tests.pipeline.helpers import RUNNER, write_tasks

CHATTY = "rollouts.runner=fakes.runner:ChattyRunner"


@pytest.fixture
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})  # the head runs no rollout
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]  # one worker actor per node
    ray.init(
        address=cluster.address,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parents[2])}},
    )
    yield cluster, nodes
    ray.shutdown()
    cluster.shutdown()


@pytest.mark.slow
def test_a_node_lost_mid_run_loses_no_task(make_run, cluster) -> None:
    cluster, nodes = cluster
    ctx = make_run(RUNNER, "ray.num_workers=2", "ray.rollouts_per_worker=2", "ray.num_cpus_per_worker=1")
    tasks = write_tasks(ctx, ["ok"] * 60)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(run_rollouts(ctx)), daemon=True)
    runner.start()  # the driver runs beside us; node changes must come from the main thread
    deadline = time.monotonic() + 120
    while len(ctx.store.done("rollouts")) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    cluster.remove_node(nodes[0], allow_graceful=False)
    removed_after = len(ctx.store.done("rollouts"))
    cluster.add_node(num_cpus=1)  # a replacement, where the lost worker can restart
    runner.join(timeout=240)
    assert removed_after < 60, "the node should go while rollouts are in flight"
    figures = result
    rows = read_parquet(ctx.store.root / "rollouts.parquet", Rollout)
    assert sorted(r.task_id for r in rows) == sorted(t.task_id for t in tasks)  # each exactly once
    assert figures["done"] == 60 and figures["resubmitted"] >= 1
    assert any(r.attempt > 1 for r in rows)


@pytest.mark.slow
def test_without_ray_address_a_run_starts_its_own_instance_beside_a_cluster_on_the_machine(cluster, tmp_path: Path) -> None:
    """A cluster started on this machine (as `ray start` does) is not joined by a run that names none: it embeds its own."""
    cluster, _ = cluster
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"WANDB_MODE": "disabled"}
    command = [sys.executable, "-m", "pipeline.synthesize", f"run.dir={tmp_path / 'run'}", "limit=2", "tracking=disabled"]
    command += ["stages=[tasks,rollouts]", RUNNER, "ray.num_workers=1", "ray.num_cpus_per_worker=0.5"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (trace,) = (tmp_path / "run" / "rollouts").glob("*/trace.txt")
    gcs = dict(line.split(" ", 1) for line in trace.read_text().splitlines())["gcs"]
    assert gcs != cluster.address


@pytest.mark.slow
def test_two_workers_never_put_more_calls_on_a_replica_than_its_limit(make_run, cluster) -> None:
    """Each worker alone would allow llm.max_concurrency calls; the run's one admission view allows that many in all."""
    with FakeOpenAIServer(lambda _: Reply("noted"), latency_s=0.1) as srv:
        fleet = [f"llm.base_url={srv.url}", "llm.model=fake", "llm.max_concurrency=3", "llm.initial_concurrency=3"]
        ctx = make_run(CHATTY, "ray=cluster", "ray.num_workers=2", "ray.rollouts_per_worker=8", "llm=openai", *fleet)
        write_tasks(ctx, ["ok"] * 16)
        figures = run_rollouts(ctx)
    assert figures["done"] == 16 and srv.served == 16 * 4
    assert srv.peak_in_flight == 3  # 16 rollouts in flight on 2 workers wanted 16 calls at once
