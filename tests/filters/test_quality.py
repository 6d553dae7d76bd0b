"""The quality gate: measured defects first (no model call), then the vision judge in image-limited batches."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.config import LLMConfig
from core.defects import Defect, Severity
from core.llm.client import ModelClient
from core.records import ArtifactError
from fakes.openai_server import FakeOpenAIServer, Reply, replay
from fakes.runs import RolloutSpec, candidate
from filters.config import FiltersConfig
from filters.gates import SCRIPTED_LABEL
from filters.quality import QualityGate, VisionJudge

pytestmark = pytest.mark.usefixtures("close_model_clients")  # tests/conftest.py

CFG = FiltersConfig(quality_images_per_call=2)
MAJOR = Defect("low_contrast", "major", "p.note", "contrast 2.8:1")


def answer(*defects: tuple[int, str, bool], passed: bool | None = None) -> Reply:
    listed = [{"slide": n, "kind": kind, "critical": critical, "detail": f"{kind} on slide {n}"} for n, kind, critical in defects]
    verdict = not any(critical for *_, critical in defects) if passed is None else passed
    return Reply(json.dumps({"reasoning": "looked at each slide", "defects": listed, "passed": verdict}))


def vision_gate(srv: FakeOpenAIServer, cfg: FiltersConfig = CFG) -> QualityGate:
    return QualityGate(
        cfg, VisionJudge(ModelClient(LLMConfig(base_url=srv.url, model="judge-vlm", max_retries=0), "quality_judge"), cfg)
    )


def shown(request: dict[str, Any]) -> list[int]:
    (message,) = request["messages"]
    text = next(p["text"] for p in message["content"] if p["type"] == "text")
    return [int(n) for n in re.search(r"images below are slides ([\d, ]+) of", text).group(1).split(", ")]


def images(request: dict[str, Any]) -> int:
    return sum(p["type"] == "image_url" for p in request["messages"][0]["content"])


async def test_critical_measured_defect_rejects_without_a_call(tmp_path: Path) -> None:
    with FakeOpenAIServer(replay([answer()]), strict="vllm-glm") as srv:
        verdict = await vision_gate(srv).judge(candidate(tmp_path, RolloutSpec("q1", slides=4, broken_image=True)))
        assert srv.requests == []
    assert (verdict.gate, verdict.passed, verdict.category, verdict.score) == ("quality", False, "quality", 0.75)
    assert verdict.reasons == (
        "slide 1 (slides/slide_01.html): measured broken_image (critical) img.hero: img assets/missing.png file not found",
        "rejected on measured defects; no judge call",
    )


async def test_reject_severity_comes_from_config(tmp_path: Path) -> None:
    cand = candidate(tmp_path, RolloutSpec("q2", language="zh", aspect="4:3", slides=2, defects=((2, MAJOR),)))
    scripted = await QualityGate(FiltersConfig(), None).judge(cand)
    assert (scripted.passed, scripted.reasons) == (True, ("no critical measured defect (1 lesser)", SCRIPTED_LABEL))
    strict = await QualityGate(FiltersConfig(quality_reject_severity=Severity.major), None).judge(cand)
    assert (strict.passed, strict.reasons[0]) == (
        False,
        "slide 2 (slides/slide_02.html): measured low_contrast (major) p.note: contrast 2.8:1",
    )


async def test_vision_judge_sees_every_slide_in_batches_within_the_image_limit(tmp_path: Path) -> None:
    cand = candidate(tmp_path, RolloutSpec("q3", language="zh", slides=5, defects=((3, MAJOR),)))
    with FakeOpenAIServer(replay([answer()]), strict="vllm-glm") as srv:
        verdict = await vision_gate(srv).judge(cand)
        requests = sorted(srv.requests, key=lambda r: shown(r)[0])
    assert [shown(r) for r in requests] == [[1, 2], [3, 4], [5]]
    assert [images(r) for r in requests] == [2, 2, 1]
    assert (
        "slide 3 (slides/slide_03.html): low_contrast (major) p.note: contrast 2.8:1"
        in requests[1]["messages"][0]["content"][0]["text"]
    )
    assert "of a 5-slide deck\n(16:9, written in Chinese)" in requests[0]["messages"][0]["content"][0]["text"]
    assert (verdict.passed, verdict.score, verdict.reasons) == (True, 1.0, ())


async def test_critical_defect_seen_by_the_judge_rejects_naming_slide_and_defect(tmp_path: Path) -> None:
    def policy(body: dict[str, Any]) -> Reply:
        return answer((3, "overlap", True), (4, "other", False)) if shown(body) == [3, 4] else answer()

    with FakeOpenAIServer(policy, strict="vllm-glm") as srv:
        verdict = await vision_gate(srv).judge(candidate(tmp_path, RolloutSpec("q4", slides=4)))
    assert (verdict.passed, verdict.category, verdict.score) == (False, "quality", 0.75)
    assert verdict.reasons == ("slide 3 (slides/slide_03.html): overlap: overlap on slide 3",)


async def test_passed_true_beside_a_critical_defect_rejects(tmp_path: Path) -> None:
    with FakeOpenAIServer(replay([answer((1, "blank", True), passed=True)]), strict="vllm-glm") as srv:
        verdict = await vision_gate(srv, FiltersConfig()).judge(candidate(tmp_path, RolloutSpec("q5", aspect="A1", slides=1)))
        assert len(srv.requests) == 1
    assert not verdict.passed and verdict.reasons == ("slide 1 (slides/slide_01.html): blank: blank on slide 1",)


@pytest.mark.parametrize(
    ("bad", "complaint"),
    [
        (answer((2, "other", False), passed=False), "'passed' is false but no critical defect is listed"),
        (answer((7, "overlap", True)), "slide(s) [7] were not shown; the slides shown are [1, 2]"),
        (Reply("The slides look great."), "not valid JSON"),
    ],
    ids=["fails-naming-nothing", "unknown-slide", "prose"],
)
async def test_unusable_reply_is_asked_again(tmp_path: Path, bad: Reply, complaint: str) -> None:
    with FakeOpenAIServer(replay([bad, answer((2, "text_clipped", True))]), strict="vllm-glm") as srv:
        verdict = await vision_gate(srv).judge(candidate(tmp_path, RolloutSpec("q6", slides=2)))
        assert len(srv.requests) == 2 and complaint in srv.requests[1]["messages"][-1]["content"]
    assert verdict.reasons == ("slide 2 (slides/slide_02.html): text_clipped: text_clipped on slide 2",)


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda ws: (ws / "deck_defects.json").unlink(), "deck_defects.json: no such file"),
        (lambda ws: (ws / "deck_defects.json").write_text("{not json"), "deck_defects.json: unreadable"),
        (lambda ws: (ws / "deck_defects.json").write_text('{"aspect": "16:9"}'), "not a deck defects file"),
        (lambda ws: (ws / "previews" / "slide_02.png").unlink(), "slide preview\\(s\\) missing: previews/slide_02.png"),
    ],
    ids=["no-defects-file", "bad-json", "no-slides", "no-preview"],
)
async def test_missing_or_unreadable_inputs_are_artifact_errors(tmp_path: Path, breakage: Any, message: str) -> None:
    cand = candidate(tmp_path, RolloutSpec("q7", slides=2))
    breakage(tmp_path / "rollouts" / "q7")
    with FakeOpenAIServer(replay([answer()]), strict="vllm-glm") as srv, pytest.raises(ArtifactError, match=message):
        await vision_gate(srv).judge(cand)


async def test_rollout_without_a_defects_artifact_is_an_artifact_error(tmp_path: Path) -> None:
    spec = RolloutSpec("q8", slides=1, recorded=("pdf", "trajectory:presenter"))
    with pytest.raises(ArtifactError, match="q8: the rollout recorded no 'defects' artifact"):
        await QualityGate(FiltersConfig(), None).judge(candidate(tmp_path, spec))
