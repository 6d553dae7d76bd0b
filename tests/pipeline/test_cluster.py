"""Rollouts on a simulated multi-node Ray cluster; a node is removed mid-run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from core.records import Rollout, read_parquet
from pipeline.rollouts import run_rollouts
from tests.pipeline.test_rollouts import RUNNER, write_tasks


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
