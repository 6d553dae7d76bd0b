"""benchmarks.rollout_throughput's model stand-in keeps to the Model protocol the agent loop reads
(the benchmark itself takes minutes: `python -m benchmarks.rollout_throughput --concurrency 1 --repeats 1`)."""

from __future__ import annotations

from pathlib import Path

from agents.policies.scripted import ScriptedPolicy
from agents.workflow import brief_for
from benchmarks.rollout_throughput import PacedModel
from core.protocols import Model
from core.records import Task


def test_the_paced_model_is_a_model() -> None:
    brief = brief_for(Task("bench", "manual", "A talk on tides.", "en"), Path("."), ())
    assert isinstance(PacedModel(ScriptedPolicy("researcher", brief), client=None), Model)
