"""Units and the ledger: calls count into the unit being worked on, a unit's usage is published with it, the cap."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT, LLMConfig, PriceConfig, RunConfig
from core.llm.client import ModelClient
from core.llm.results import ModelError
from core.prompts import manifest, render, template_digest
from core.records import Message, Verdict
from core.run.ledger import SpendingCap, play_unit, read_ledger
from core.run.metering import Unit, UnitCancelled, part_scope, unit_scope
from core.run.store import ConfigMismatch, RunStore
from core.run.usage import RoleUsage
from fakes.openai_server import FakeOpenAIServer, Reply
from pipeline.config import SynthesizeConfig

PRICE = PriceConfig(input_per_mtok=1000.0, output_per_mtok=2000.0, cached_input_per_mtok=100.0)  # $0.001 per prompt token
HELLO = [Message("user", "hello")]


def client(srv: FakeOpenAIServer, role: str = "judge", **overrides: object) -> ModelClient:
    return ModelClient(LLMConfig(base_url=srv.url, model="fake", price=PRICE, backoff_base_s=0.01, **overrides), role)


def verdict(task_id: str) -> Verdict:
    return Verdict(task_id=task_id, gate="quality", passed=True)


async def test_calls_count_into_the_unit_they_run_in_with_cached_tokens_and_the_model() -> None:
    with FakeOpenAIServer(
        lambda _: Reply("ok", prompt_tokens=1000, completion_tokens=10, cached_tokens=400), strict="vllm-glm"
    ) as srv:
        c = client(srv)
        unit = Unit()
        with unit_scope(unit):
            await asyncio.gather(c.chat(HELLO), c.chat(HELLO))  # tasks a unit gathers count too
        await c.chat(HELLO)  # outside any unit: the client's own meter
        await c.aclose()
    usage = unit.usage()["judge"]
    assert (usage.calls, usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (2, 2000, 800, 20)
    assert usage.cost == pytest.approx(2 * (600 * 1e-3 + 400 * 1e-4 + 10 * 2e-3))
    assert c.meter.totals().calls == 1
    assert unit.origin().models["judge"].model == "fake" and unit.origin().models["judge"].temperature == 0.7


async def test_a_unit_at_its_cap_refuses_the_next_call_and_says_so() -> None:
    with FakeOpenAIServer(lambda _: Reply("ok", prompt_tokens=1000, completion_tokens=0), strict="vllm-glm") as srv:
        c = client(srv, role="agent")
        unit = Unit(max_cost_usd=1.5)  # each call costs $1
        with unit_scope(unit):
            await c.chat(HELLO)
            await c.chat(HELLO)  # $1 spent: still under the cap, so the call is made (the overshoot is one call)
            with pytest.raises(ModelError) as refused:
                await c.chat(HELLO)
        await c.aclose()
        assert len(srv.requests) == 2
    assert refused.value.kind == "budget" and "rollouts.max_cost_usd=1.5" in str(refused.value)
    assert unit.usage()["agent"].failures == {"budget": 1}


async def test_a_part_counts_into_its_unit_and_keeps_its_own_origin(tmp_path: Path) -> None:
    (tmp_path / "a.j2").write_text("A {{ x }}")
    (tmp_path / "b.j2").write_text("B")
    unit = Unit()
    with unit_scope(unit):
        render(tmp_path, "a.j2", x=1)
        with part_scope() as part:
            render(tmp_path, "b.j2")
    assert set(part.origin().templates) == {str(tmp_path / "b.j2")} and part.meter is unit.meter
    assert set(unit.origin().templates) == {str(tmp_path / "a.j2"), str(tmp_path / "b.j2")}


def test_a_template_s_hash_covers_what_it_includes(tmp_path: Path) -> None:
    (tmp_path / "rubric.j2").write_text("score 1-5")
    (tmp_path / "judge.j2").write_text("Judge.\n{% include 'rubric.j2' %}")
    before = manifest([tmp_path])
    (tmp_path / "rubric.j2").write_text("score 1-10")
    after = manifest([tmp_path])
    assert before[str(tmp_path / "rubric.j2")] != after[str(tmp_path / "rubric.j2")]
    assert before[str(tmp_path / "judge.j2")] != after[str(tmp_path / "judge.j2")]  # the includer changes with its include


def test_a_changed_template_changes_the_config_hash_and_is_named_unless_forced(tmp_path: Path) -> None:
    root, config = tmp_path / "run", {"run": {"name": "x"}}
    first = RunStore.open(root, config, prompts={"critic/prompts/slide_review.j2": "aaaaaaaaaaaa"}).config_hash
    with pytest.raises(
        ConfigMismatch, match=r"prompt templates changed since: critic/prompts/slide_review.j2 \(aaaaaaaaaaaa -> bbbbbbbbbbbb\)"
    ):
        RunStore.open(root, config, prompts={"critic/prompts/slide_review.j2": "bbbbbbbbbbbb"})
    forced = RunStore.open(root, config, force=True, prompts={"critic/prompts/slide_review.j2": "bbbbbbbbbbbb"})
    assert forced.config_hash != first and json.loads((root / "prompts.json").read_text()) == {
        "critic/prompts/slide_review.j2": "bbbbbbbbbbbb"
    }


def test_an_edited_template_of_a_run_s_folders_stops_its_rerun_unless_forced(
    make_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open_run hashes the templates of the config class's PROMPTS folders: an edit between two runs is a mismatch."""
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "review.j2").write_text("Review the slide.")
    monkeypatch.setattr(SynthesizeConfig, "PROMPTS", (*SynthesizeConfig.PROMPTS, str(folder)))
    first = make_run().store
    before = first.config_hash
    assert json.loads((first.root / "prompts.json").read_text())["critic/prompts/slide_review.j2"] == template_digest(
        PROJECT_ROOT / "critic" / "prompts", "slide_review.j2"
    )
    assert make_run().store.config_hash == before  # nothing changed: the same run
    (folder / "review.j2").write_text("Review the slide harshly.")
    with pytest.raises(ConfigMismatch, match=f"prompt templates changed since: {folder / 'review.j2'}"):
        make_run()
    assert make_run("run.resume=force").store.config_hash != before


async def test_a_unit_is_published_with_its_usage_and_origin_and_counted_once(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    with FakeOpenAIServer(lambda _: Reply("ok", prompt_tokens=100, completion_tokens=10), strict="vllm-glm") as srv:
        c = client(srv)

        async def judged() -> Verdict:
            await c.chat(HELLO)
            return verdict("t1")

        async def undecided() -> None:
            await c.chat(HELLO)  # spent, but no verdict: kept apart, the unit is left for the next run

        async def broken() -> Verdict:
            await c.chat(HELLO)
            raise RuntimeError("judge crashed")

        record = await play_unit(store, "verdicts", "t1__quality", judged)
        assert await play_unit(store, "verdicts", "t2__quality", undecided) is None
        with pytest.raises(RuntimeError):
            await play_unit(store, "verdicts", "t3__quality", broken)
        await c.aclose()
    assert record.usage["judge"].calls == 1 and record.origin.models["judge"].model == "fake"
    assert store.load_map("verdicts", Verdict)["t1__quality"] == record
    ledger = read_ledger(tmp_path)
    assert ledger.units == {"verdicts": 1} and ledger.stages["verdicts"]["judge"].calls == 1
    assert ledger.unfinished["verdicts"]["judge"].calls == 2 and ledger.total().calls == 3
    assert ledger.total().cost == pytest.approx(3 * (100 * 1e-3 + 10 * 2e-3))


def test_units_written_before_version_2_count_no_usage(tmp_path: Path) -> None:
    folder = tmp_path / "units" / "rollouts"
    folder.mkdir(parents=True)
    (folder / "old.json").write_text(json.dumps({"task_id": "old", "status": "done", "schema_version": 1}))
    ledger = read_ledger(tmp_path)
    assert ledger.units == {"rollouts": 1} and ledger.total() == RoleUsage()


async def test_the_run_cap_holds_back_new_units_and_cancels_those_in_flight_when_asked(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    with FakeOpenAIServer(lambda _: Reply("ok", prompt_tokens=1000, completion_tokens=0), strict="vllm-glm") as srv:  # $1 a call
        c = client(srv, max_concurrency=1)

        async def two_calls() -> Verdict:
            await c.chat(HELLO)
            await c.chat(HELLO)
            return verdict("x")

        finish = SpendingCap(RunConfig(max_cost_usd=3.0), RoleUsage(cost_usd=0.5))
        results = [await play_unit(store, "verdicts", f"f{i}", two_calls, finish) for i in range(3)]
        assert [r is not None for r in results] == [True, True, False] and finish.held_back == 1  # $0.5 + 2 + 2: over after two
        assert "run.max_cost_usd=3 reached: $4.5000 spent" in str(finish.stop("filters"))

        cancel = SpendingCap(RunConfig(max_cost_usd=1.0, budget_in_flight="cancel"), RoleUsage())
        assert await play_unit(store, "verdicts", "c1", two_calls, cancel) is None  # stopped at its second call
        assert cancel.held_back == 1 and not store.is_done("verdicts", "c1")
        await c.aclose()
    assert read_ledger(tmp_path).unfinished["verdicts"]["judge"].calls == 1  # what the cancelled unit spent is kept


def test_a_cancelled_unit_stops_at_its_next_call_not_before() -> None:
    cap = SpendingCap(RunConfig(max_cost_usd=1.0, budget_in_flight="cancel"), RoleUsage(cost_usd=2.0))
    unit = Unit(cap=cap)
    with pytest.raises(UnitCancelled, match="run.max_cost_usd=1 reached"):
        unit.refusal()
    assert Unit(cap=SpendingCap(RunConfig(max_cost_usd=1.0), RoleUsage(cost_usd=2.0))).refusal() is None  # finish: runs on
