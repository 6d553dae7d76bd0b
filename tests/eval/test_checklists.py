"""The checklist judge and stage (eval/checklist/judge.py, eval/checklist/stage.py): the stand-in's rules, a model
judge behind the fake OpenAI server (real HTTP), scores per class, resume per check, projection and the cap."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from core.config import LLMConfig, PriceConfig, RunConfig
from core.records import Check, CheckClass, Constraints, Task
from core.run.ledger import BudgetExhausted, SpendingCap
from core.run.store import RunStore
from core.run.usage import RoleUsage
from eval.checklist.stage import UNITS, CheckAnswers, deck_checks, judge_all, scored
from eval.config import EvalConfig, JudgeConfig
from fakes.openai_server import FakeOpenAIServer
from tests.eval.helpers import ENGLISH, answering, export_workspace

CHECKS = (
    Check("fundamentals-slides", CheckClass.fundamentals, "The deck has 3 slides.", "slides:3-3"),
    Check("fundamentals-language", CheckClass.fundamentals, "The slides are in Chinese.", "language:zh"),
    Check("fundamentals-aspect", CheckClass.fundamentals, "The slides are 16:9.", "aspect:16:9"),
    Check("visual_design-readable", CheckClass.visual_design, "Text is readable."),
    Check("visual_design-consistent", CheckClass.visual_design, "One visual style."),
    Check("visual_design-overflow", CheckClass.visual_design, "Nothing overflows."),
    Check("completeness-01", CheckClass.completeness, "It covers “Training”.", "mentions:Training"),
    Check("completeness-02", CheckClass.completeness, "It covers “Quantum”.", "mentions:Quantum"),
    Check("correctness-facts", CheckClass.correctness, "Facts agree with the source."),
)
TASK = Task("t1", "persona", "Make a deck about attention.", "en", constraints=Constraints(3, 3, "16:9", "en"), checklist=CHECKS)


@pytest.fixture
def run_root(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    rollout = export_workspace(tmp_path, "t1", "16:9", [ENGLISH] * 3, headings=("Attention", "Training", "Scaling"))
    return tmp_path, {"t1": rollout}


def config(url: str = "none://scripted", **judge: Any) -> EvalConfig:
    backend = "scripted" if url.startswith("none") else "openai"
    endpoint = LLMConfig(backend=backend, base_url=url, model="fake-judge", max_retries=0, temperature=0.0, **judge)
    return EvalConfig(tasks="unused.parquet", judge=JudgeConfig(endpoint=endpoint, max_concurrency=1))


def judged(cfg: EvalConfig, root: Path, rollouts: dict[str, Any], cap: SpendingCap | None = None):
    store = RunStore(root)
    decks = deck_checks(cfg, [TASK], rollouts, root)
    asyncio.run(judge_all(cfg, decks, store, cap))
    return scored(decks, store), store


def test_the_stand_in_decides_the_checks_with_a_rule_and_no_other(run_root) -> None:
    root, rollouts = run_root
    (result,), _ = judged(config(), root, rollouts)
    answers = {i: a["answer"] for i, a in result.answers.items()}
    assert answers["fundamentals-slides"] == "yes" and answers["fundamentals-aspect"] == "yes"
    assert answers["fundamentals-language"] == "no"  # the deck is in English
    assert (answers["completeness-01"], answers["completeness-02"]) == ("yes", "no")
    assert {answers[i] for i in ("visual_design-readable", "correctness-facts", "fidelity-01")} == {"not_applicable"}
    assert len([i for i in answers if i.startswith("fidelity-")]) == 3  # one per slide, written at judge time
    assert "offline stand-in" in result.answers["correctness-facts"]["reason"]
    assert result.score.classes["fundamentals"].score == pytest.approx(20 * 2 / 3)


def test_a_model_s_no_to_one_check_lowers_exactly_its_class_by_its_share(run_root, tmp_path_factory) -> None:
    root, rollouts = run_root
    with FakeOpenAIServer(answering(set()), model="fake-judge", strict="openai") as srv:
        (clean,), _ = judged(config(srv.url), root, rollouts)
    other = tmp_path_factory.mktemp("other")
    export_workspace(other, "t1", "16:9", [ENGLISH] * 3, headings=("Attention", "Training", "Scaling"))
    with FakeOpenAIServer(answering({"visual_design-readable"}), model="fake-judge", strict="openai") as srv:
        (one_no,), _ = judged(config(srv.url), other, rollouts)
    assert clean.score.percent == 100.0
    changed = {c for c in clean.score.classes if clean.score.classes[c] != one_no.score.classes[c]}
    assert changed == {"visual_design"}
    assert one_no.score.classes["visual_design"].score == pytest.approx(20 * 2 / 3)  # 2 of its 3 checks yes
    assert one_no.score.percent == pytest.approx((4 * 20 + 20 * 2 / 3) / 100 * 100)
    assert one_no.answers["visual_design-readable"] == {"answer": "no", "reason": "seen"}


def test_a_killed_stage_resumes_without_judging_an_answered_check_twice(run_root) -> None:
    root, rollouts = run_root
    policy = answering(set(), delay_s=0.05)
    with FakeOpenAIServer(policy, model="fake-judge", strict="openai") as srv:
        cfg = config(srv.url)
        store = RunStore(root)
        decks = deck_checks(cfg, [TASK], rollouts, root)

        async def killed() -> None:
            stage = asyncio.ensure_future(judge_all(cfg, decks, store, None))
            while srv.served < 5:
                await asyncio.sleep(0.01)
            stage.cancel()  # as a kill: the call in flight is lost, the answered ones are on disk
            await asyncio.gather(stage, return_exceptions=True)

        asyncio.run(killed())
        first = {a for r in store.load(UNITS, CheckAnswers) for a in re.findall(r'"check_id": "([^"]+)"', r.answers_json)}
        asked_before = len(policy.asked)
        asyncio.run(judge_all(cfg, decks, store, None))
    again = policy.asked[asked_before:]
    assert 4 <= len(first) < 12 and not set(again) & first  # none answered before is asked again
    (result,) = scored(decks, store)
    assert len(result.answers) == len(CHECKS) + 3 and result.score.percent == 100.0


def test_the_calls_are_projected_before_judging_and_the_run_s_cap_stops_the_stage(run_root, caplog) -> None:
    root, rollouts = run_root
    with FakeOpenAIServer(answering(set()), model="fake-judge", strict="openai") as srv:
        cfg = config(srv.url, price=PriceConfig(input_per_mtok=1.0, output_per_mtok=2.0))
        with caplog.at_level(logging.INFO, logger="eval.checklist.stage"):
            spent = SpendingCap(RunConfig(max_cost_usd=0.01), RoleUsage(calls=1, cost_usd=0.02))
            with pytest.raises(BudgetExhausted, match="stage eval/checklist stopped"):
                judged(cfg, root, rollouts, spent)
        assert srv.served == 0  # the cap was reached before: nothing judged
    assert "checklist: 12 checks to judge on 1 decks, 12 judge calls" in caplog.text and "projected $" in caplog.text
