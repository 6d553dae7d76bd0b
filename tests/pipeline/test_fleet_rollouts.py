"""Rollouts against a fleet of three replicas (fake servers on loopback) while one of them dies and comes back."""

from __future__ import annotations

import threading
import time
from collections import Counter
from contextlib import ExitStack

import pytest

from core.llm.fleet import rendezvous
from core.records import Rollout, read_parquet
from core.run.ledger import read_ledger
from fakes.openai_server import FakeOpenAIServer, Reply
from pipeline.rollouts import run_rollouts
from tests.pipeline.helpers import write_tasks

pytestmark = [pytest.mark.usefixtures("embedded_ray"), pytest.mark.slow]
CHATTY = "rollouts.runner=fakes.runner:ChattyRunner"


def noted(_: dict) -> Reply:
    return Reply("noted", delay_s=0.05)


def wait_for(condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_replica_killed_mid_run_its_rollouts_finish_on_the_others_once_and_it_rejoins(make_run) -> None:
    servers = [FakeOpenAIServer(noted).__enter__() for _ in range(3)]
    urls = [s.url for s in servers]
    pinned = Counter(rendezvous(f"t{i:02d}", urls) for i in range(30))  # the rollouts' keys: their task ids
    a = next(s for s in servers if s.url == pinned.most_common(1)[0][0])  # the one with most rollouts dies
    with ExitStack() as stack:
        for other in servers:
            if other is not a:
                stack.callback(other.__exit__, None, None, None)
        ctx = make_run(
            CHATTY, "ray.num_workers=2", "ray.rollouts_per_worker=4", "ray.num_cpus_per_worker=0.5", "llm=openai",
            f"llm.base_url=[{','.join(urls)}]", "llm.model=fake", "llm.backoff_base_s=0.05", "llm.probe_interval_s=0.2",
        )  # fmt: skip
        tasks = write_tasks(ctx, ["ok"] * 30)
        result: dict = {}
        driver = threading.Thread(target=lambda: result.update(run_rollouts(ctx)), daemon=True)
        driver.start()
        wait_for(lambda: a.served >= 6)  # some of its rollouts are under way
        a.__exit__(None, None, None)
        killed_at = len(ctx.store.done("rollouts"))
        wait_for(lambda: len(ctx.store.done("rollouts")) >= killed_at + 3)  # the run goes on without it
        back = stack.enter_context(FakeOpenAIServer(noted, port=a.port))
        driver.join(timeout=240)
    assert killed_at < 24 and result["done"] == 30
    rows = read_parquet(ctx.store.root / "rollouts.parquet", Rollout)
    assert sorted(r.task_id for r in rows) == sorted(t.task_id for t in tasks)  # each exactly once
    assert back.served > 0  # it rejoined: its rollouts (and new ones) came back to it
    replicas = read_ledger(ctx.store.root).stages["rollouts"]["agent"].replicas
    assert replicas[a.url].errors >= 1 and sum(r.calls for r in replicas.values()) == 30 * 4
    assert back.served <= replicas[a.url].calls <= a.served + back.served  # (a call cut by the kill is an error)
