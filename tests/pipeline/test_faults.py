"""Rollouts with the real runner against a fake model endpoint that fails 20% of the time."""

from __future__ import annotations

import pytest

from core.records import Rollout, read_parquet
from fakes.model import succeeded
from fakes.openai_server import FakeOpenAIServer, FaultPlan, Reply
from pipeline.rollouts import run_rollouts
from tests.pipeline.helpers import write_tasks

SLIDE = '<html><body style="margin:0;width:1280px;height:720px"><h1 style="margin:80px;font-size:48px">{}</h1></body></html>'


def steady_model(body: dict) -> Reply:
    """Does the next thing not yet done; repeats a step whose call failed (e.g. malformed arguments)."""
    messages = body["messages"]
    if messages[0]["content"].startswith("You are the Researcher"):
        if not succeeded(messages, "write_file", path="manuscript.md"):
            return Reply("", [("write_file", {"path": "manuscript.md", "content": "# One\n\n- a\n\n---\n\n# Two\n\n- b\n"})])
        return Reply("", [("finalize", {"outcome": "manuscript.md"})])
    for n in (1, 2):
        path = f"slides/slide_0{n}.html"
        if not succeeded(messages, "write_file", path=path):
            return Reply("", [("write_file", {"path": path, "content": SLIDE.format(f"Slide {n}")})])
    return Reply("", [("finalize", {"outcome": "slides"})])


pytestmark = pytest.mark.usefixtures("embedded_ray")


@pytest.mark.chromium
@pytest.mark.slow
def test_run_completes_with_20_percent_model_faults(make_run) -> None:
    faults = FaultPlan(rate=0.2, kinds=("500", "429", "malformed_tool_json", "truncated"), seed=5, retry_after_s=0.05)
    with FakeOpenAIServer(steady_model, faults=faults, strict="openai") as srv:
        ctx = make_run(
            "llm=openai",
            f"llm.base_url={srv.url}",
            "llm.model=fake",
            "llm.backoff_base_s=0.02",
            "llm.max_retries=3",
            "critic=rules",
            "ray.num_workers=1",
            "ray.rollouts_per_worker=4",
            "ray.num_cpus_per_worker=0.5",
        )
        tasks = write_tasks(ctx, ["ok"] * 8)
        figures = run_rollouts(ctx)
    assert srv.refused == []  # every failure is an injected fault, none a refused request
    rows = {r.task_id: r for r in read_parquet(ctx.store.root / "rollouts.parquet", Rollout)}
    assert set(rows) == {t.task_id for t in tasks}  # every task accounted for
    assert all(r.status == "done" or r.failure.startswith("environment/") for r in rows.values())
    assert figures["done"] >= 6, [r.failure for r in rows.values()]
    assert len(srv.faults_served) >= 8 and {"500", "429"} <= set(srv.faults_served)
    assert sum(r.usage["agent"].retries for r in rows.values()) > 0
    assert all(r.tokens_by_role()["agent"].prompt_tokens > 0 for r in rows.values())
