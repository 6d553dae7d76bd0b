"""Each deck's scores are a unit: the judge's calls are counted once, a rerun scores only what is missing."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from pathlib import Path

from core.config import LLMConfig, PriceConfig
from core.run.ledger import read_ledger
from core.run.store import RunStore
from eval.config import EvalConfig, JudgeConfig
from eval.scoring import UNITS, DeckScores, score_all
from fakes.openai_server import FakeOpenAIServer, Reply
from tests.eval.helpers import ENGLISH, export_workspace, task

PRICE = PriceConfig(input_per_mtok=1.0, output_per_mtok=2.0)


def judge_model(body: dict) -> Reply:
    """Describes and scores every slide; a 4:3 slide's description makes the judge answer with no JSON."""
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else next(p["text"] for p in first if p["type"] == "text")
    if text.startswith("You are describing one presentation slide"):
        png = base64.b64decode(next(p["image_url"]["url"] for p in first if p["type"] == "image_url").split(",", 1)[1])
        width, height = struct.unpack(">II", png[16:24])  # the PNG header
        return Reply(
            json.dumps({"content": "BROKEN" if width * 3 == height * 4 else "a title and two bullets", "style": "dark on white"})
        )
    if "BROKEN" in text:
        return Reply("no JSON here")
    return Reply(json.dumps({"content": {"score": 4, "reason": "clear"}, "style": {"score": 3, "reason": "plain"}}))


def config(srv: FakeOpenAIServer) -> EvalConfig:
    endpoint = LLMConfig(base_url=srv.url, model="judge-vlm", price=PRICE, max_retries=0, temperature=0.0)
    return EvalConfig(judge=JudgeConfig(endpoint=endpoint, json_retries=0, cache_dir=None))


def test_scored_decks_are_units_and_a_rerun_judges_only_the_unjudged(tmp_path: Path) -> None:
    tasks = [task("good", slides=2, aspect="16:9"), task("bad", slides=1, aspect="4:3")]
    rollouts = {
        "good": export_workspace(tmp_path, "good", "16:9", [ENGLISH, ENGLISH]),
        "bad": export_workspace(tmp_path, "bad", "4:3", [ENGLISH]),
    }
    store = RunStore(tmp_path)
    with FakeOpenAIServer(judge_model, strict="vllm-glm") as srv:
        first = asyncio.run(score_all(config(srv), tasks, rollouts, store))
        asked = len(srv.requests)
        (tmp_path / "judge_cache").rename(tmp_path / "cache_gone")  # a rerun must not need the cache: the units hold the scores
        second = asyncio.run(score_all(config(srv), tasks, rollouts, store))
        again = len(srv.requests) - asked
        assert srv.refused == []  # the unjudged deck failed on its reply, not on a refused request
    done = store.load_map(UNITS, DeckScores)
    assert set(done) == {"good"} and done["good"].score.content == 4.0  # the unjudged deck left no unit
    assert {d.score.task_id: d.score.content for d in first} == {"good": 4.0, "bad": None}
    assert {d.score.task_id: d.score.content for d in second} == {"good": 4.0, "bad": None}
    assert again == 2  # only the unjudged deck's slide was asked again (a description and a score)
    record = done["good"]
    assert record.usage["describer"].calls == 2 and record.usage["judge"].calls == 2
    assert record.origin.templates.keys() == {"eval/prompts/describe.j2", "eval/prompts/judge.j2"}
    assert record.origin.models["judge"].model == "judge-vlm" and record.origin.models["judge"].temperature == 0.0
    ledger = read_ledger(tmp_path)
    assert ledger.stages[UNITS]["judge"].calls == 2 and ledger.unfinished[UNITS]["judge"].calls == 2  # bad, twice
    assert ledger.total().calls == asked + again
