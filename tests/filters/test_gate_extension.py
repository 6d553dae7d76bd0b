"""docs/extending.md, a new gate: one module (a Gate and its GateSpec) plus its line in filters.registry.GATES.

The throwaway gate rejects decks of fewer than three slides; its verdicts are written with the
others, its category is counted, and what it rejects is not exported."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from core.records import Verdict
from core.run.context import RunContext
from core.seams.candidate import Candidate
from filters.gates import GateSpec
from filters.registry import GATES
from filters.run import STAGE
from pipeline.synthesize import run_export, run_filters


class ShortDeckGate:
    name = "short_deck"

    async def judge(self, candidate: Candidate) -> Verdict:
        slides = len(candidate.deck().slides)
        passed = slides >= 3
        return Verdict(
            task_id=candidate.task.task_id,
            gate=self.name,
            passed=passed,
            category=None if passed else self.name,
            score=float(passed),
            reasons=() if passed else (f"{slides} slide(s), fewer than 3",),
        )


def test_a_new_gate_judges_every_rollout_and_what_it_rejects_is_not_exported(
    monkeypatch: pytest.MonkeyPatch, make_run: Callable[..., RunContext], fake_scenario_run: Path
) -> None:
    monkeypatch.setitem(GATES, "short_deck", GateSpec("short_deck", lambda cfg: ShortDeckGate()))
    ctx = make_run("filters.gates=[short_deck]", "run.resume=force")  # the stage's config replaces the builder's
    figures = run_filters(ctx)
    verdicts = ctx.store.load(STAGE, Verdict)
    environment = {v.task_id for v in verdicts if v.category == "environment"}  # no deck to judge
    short = {v.task_id for v in verdicts if v.gate == "short_deck" and not v.passed} - environment
    kept = {v.task_id for v in verdicts if v.gate == "short_deck" and v.passed} - environment
    assert short and kept and figures["rejected_short_deck"] == len(short) and figures["accepted"] == len(kept)
    assert run_export(ctx)["accepted"] == len(kept)
    exported = "".join(path.read_text() for path in (ctx.store.root / "sft").glob("*.jsonl"))
    assert all(task_id in exported for task_id in kept) and not any(task_id in exported for task_id in short)
