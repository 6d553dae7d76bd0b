"""The consistency gate: the model judge through the fake server, and the rule-based stand-in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.config import LLMConfig
from core.llm.client import ModelClient
from core.llm.json_reply import JSONReplyError
from core.records import ArtifactError
from fakes.openai_server import FakeOpenAIServer, Reply, replay
from fakes.runs import RolloutSpec, candidate
from fakes.trajectories import TITLE_FIX, TrajectoryBuilder, slide_html, title_finding
from filters.config import FiltersConfig
from filters.consistency import ConsistencyGate, ModelRevisionJudge, RuleRevisionJudge, anchors
from filters.gates import SCRIPTED_LABEL

pytestmark = pytest.mark.usefixtures("close_model_clients")  # tests/conftest.py

CFG = FiltersConfig()


def judged(*checks: tuple[int, str], passed: bool | None = None) -> Reply:
    findings = [{"finding": n, "status": status, "reason": f"line {n} of the diff"} for n, status in checks]
    verdict = all(status == "addressed" for _, status in checks) if passed is None else passed
    return Reply(json.dumps({"reasoning": "checked the diff", "findings": findings, "passed": verdict}))


def model_gate(srv: FakeOpenAIServer) -> ConsistencyGate:
    model = ModelClient(LLMConfig(base_url=srv.url, model="judge-llm", max_retries=0), "judge")
    return ConsistencyGate(ModelRevisionJudge(model, CFG))


def prompt(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


# ---------------------------------------------------------------- model judge


async def test_no_injections_pass_without_a_call(tmp_path: Path) -> None:
    with FakeOpenAIServer(replay([judged((1, "ignored"))]), strict="vllm-glm") as srv:
        verdict = await model_gate(srv).judge(candidate(tmp_path, RolloutSpec("t1", slides=2)))
        assert srv.requests == []
    assert (verdict.gate, verdict.passed, verdict.category, verdict.score, verdict.reasons) == (
        "consistency",
        True,
        None,
        1.0,
        ("no critic injections",),
    )


async def test_judge_sees_findings_actions_and_diff_and_passes_an_addressed_injection(tmp_path: Path) -> None:
    with FakeOpenAIServer(replay([judged((1, "addressed"))]), strict="vllm-glm") as srv:
        verdict = await model_gate(srv).judge(candidate(tmp_path, RolloutSpec("t2", slides=2, revision="fix")))
        (request,) = srv.requests
    text = prompt(request)
    assert "1. [layout/critical] overflow at h1.title" in text
    assert "- said: Shrinking the title." in text and "- edit_file slides/slide_01.html" in text
    assert f'-<h1 class="title" style="{TITLE_FIX[0]}">' in text and f'+<h1 class="title" style="{TITLE_FIX[1]}">' in text
    assert "until it inspected slides/slide_01.html again" in text and "The presentation is in English" in text
    assert (verdict.passed, verdict.category, verdict.score) == (True, None, 1.0)
    assert verdict.reasons == ("1 of 1 injection(s) addressed",)


async def test_malformed_reply_is_asked_again(tmp_path: Path) -> None:
    replies = [
        Reply("Looks fine to me!"),
        Reply('```json\n{"findings": [{"finding": 1, "status": "addressed"'),
        judged((1, "addressed")),
    ]
    with FakeOpenAIServer(replay(replies), strict="vllm-glm") as srv:
        verdict = await model_gate(srv).judge(
            candidate(tmp_path, RolloutSpec("t3", language="zh", aspect="4:3", slides=2, revision="fix"))
        )
        assert len(srv.requests) == 3
        assert "could not be used: not valid JSON" in srv.requests[1]["messages"][-1]["content"]
    assert verdict.passed


async def test_judge_that_never_answers_in_json_raises_for_the_run_to_leave_undecided(tmp_path: Path) -> None:
    with FakeOpenAIServer(replay([Reply("no")]), strict="vllm-glm") as srv:
        with pytest.raises(JSONReplyError, match="malformed_json"):
            await model_gate(srv).judge(candidate(tmp_path, RolloutSpec("t4", slides=1, revision="fix")))
        assert len(srv.requests) == 1 + CFG.json_retries


async def test_passed_true_beside_an_ignored_finding_rejects(tmp_path: Path) -> None:
    with FakeOpenAIServer(replay([judged((1, "ignored"), passed=True)]), strict="vllm-glm") as srv:
        verdict = await model_gate(srv).judge(candidate(tmp_path, RolloutSpec("t5", slides=2, revision="ignore")))
        assert len(srv.requests) == 1  # a consistent enough reply: the named finding decides, no re-ask
    assert (verdict.passed, verdict.category, verdict.score) == (False, "consistency", 0.0)
    assert verdict.reasons == (
        (
            "presenter step 1 (slides/slide_01.html): finding 1 [layout/critical] overflow at h1.title: text extends past the "
            "right edge of slide 1: ignored (line 1 of the diff)"
        ),
        "presenter step 1 (slides/slide_01.html): the judge summary said passed, but the findings marked not addressed decide",
        "0 of 1 injection(s) addressed",
    )


async def test_passed_false_naming_nothing_is_asked_again(tmp_path: Path) -> None:
    with FakeOpenAIServer(
        replay([judged((1, "addressed"), passed=False), judged((1, "contradicted"))]), strict="vllm-glm"
    ) as srv:
        verdict = await model_gate(srv).judge(candidate(tmp_path, RolloutSpec("t6", slides=2, revision="other")))
        assert len(srv.requests) == 2
        assert "'passed' is false but every finding is marked addressed" in srv.requests[1]["messages"][-1]["content"]
    assert not verdict.passed and "contradicted (line 1 of the diff)" in verdict.reasons[0]


async def test_reply_must_judge_every_finding_once(tmp_path: Path) -> None:
    html = slide_html(RolloutSpec("t", slides=1), 1, TITLE_FIX[0])
    two = [
        title_finding(1),
        {"category": "style", "severity": "major", "evidence": "low_contrast at p.body: 2.1:1", "fix": "darker text"},
    ]
    t = (
        TrajectoryBuilder("t7")
        .call("write_file", path="slides/slide_01.html", content=html)
        .call("inspect_slide", html_file="slides/slide_01.html")
    )
    t.inject("slides/slide_01.html", two).call(
        "edit_file", path="slides/slide_01.html", old_string=TITLE_FIX[0], new_string=TITLE_FIX[1]
    )
    cand = candidate(tmp_path, RolloutSpec("t7", slides=1))
    cand.path("trajectory:presenter").write_text(t.build().to_json())
    with FakeOpenAIServer(
        replay([judged((1, "addressed")), judged((1, "addressed"), (1, "ignored")), judged((1, "addressed"), (2, "ignored"))]),
        strict="vllm-glm",
    ) as srv:
        verdict = await model_gate(srv).judge(cand)
        assert len(srv.requests) == 3
        assert "must judge each of findings 1-2 exactly once, got [1]" in srv.requests[1]["messages"][-1]["content"]
    assert not verdict.passed and "finding 2 [style/major] low_contrast at p.body" in verdict.reasons[0]


async def test_every_injection_of_every_trajectory_is_judged(tmp_path: Path) -> None:
    cand = candidate(tmp_path, RolloutSpec("t8", slides=2, revision="fix"))  # a researcher and a presenter
    researcher = TrajectoryBuilder("t8", agent="researcher").call("write_file", path="manuscript.md", content="# A\n")
    researcher.call("inspect_manuscript", path="manuscript.md")
    researcher.inject(
        "manuscript.md",
        [{"category": "constraint", "severity": "major", "evidence": "slide_count: 1, asked 2", "fix": "add one"}],
        tool="inspect_manuscript",
    )
    cand.path("trajectory:researcher").write_text(researcher.build().to_json())
    with FakeOpenAIServer(
        lambda body: judged((1, "ignored" if "manuscript.md" in prompt(body) else "addressed")), strict="vllm-glm"
    ) as srv:
        verdict = await model_gate(srv).judge(cand)
        assert len(srv.requests) == 2
    assert (verdict.passed, verdict.score) == (False, 0.5)
    assert verdict.reasons[0].startswith("researcher step 1 (manuscript.md): finding 1 [constraint/major] slide_count")
    assert "it never inspected manuscript.md again" in prompt(next(r for r in srv.requests if "manuscript.md" in prompt(r)))


async def test_missing_trajectory_is_an_artifact_error(tmp_path: Path) -> None:
    cand = candidate(tmp_path, RolloutSpec("t9", slides=1))
    cand.path("trajectory:presenter").unlink()
    with pytest.raises(ArtifactError, match="trajectory_presenter.json: no such file"):
        await ConsistencyGate(RuleRevisionJudge()).judge(cand)


# ---------------------------------------------------------------- the rule-based stand-in


@pytest.mark.parametrize(
    ("revision", "passed", "why"),
    [
        ("fix", True, None),
        ("ignore", False, "ignored (no changed line mentions title before it was inspected again)"),
        ("other", False, "ignored (no changed line mentions title before it was inspected again)"),
    ],
)
async def test_rule_judge_wants_a_change_touching_the_named_element(
    tmp_path: Path, revision: str, passed: bool, why: str | None
) -> None:
    verdict = await ConsistencyGate(RuleRevisionJudge()).judge(candidate(tmp_path, RolloutSpec("t", slides=2, revision=revision)))
    assert verdict.passed is passed and verdict.reasons[-1] == SCRIPTED_LABEL
    if why:
        assert verdict.reasons[0].endswith(why) and verdict.category == "consistency"


async def test_rule_judge_without_named_elements_wants_the_artifact_changed(tmp_path: Path) -> None:
    finding = {
        "category": "style",
        "severity": "major",
        "evidence": "The colours clash with the photo",
        "fix": "use a darker palette",
    }
    t = (
        TrajectoryBuilder("t")
        .call("write_file", path="slides/slide_01.html", content="<p>a</p>")
        .call("inspect_slide", html_file="slides/slide_01.html")
    )
    t.inject("slides/slide_01.html", [finding])
    cand = candidate(tmp_path, RolloutSpec("t", slides=1))
    path = cand.path("trajectory:presenter")
    path.write_text(t.build().to_json())
    assert not (await ConsistencyGate(RuleRevisionJudge()).judge(cand)).passed
    path.write_text(t.call("write_file", path="slides/slide_01.html", content="<p style='color:#111'>a</p>").build().to_json())
    assert (await ConsistencyGate(RuleRevisionJudge()).judge(cand)).passed


@pytest.mark.parametrize(
    ("evidence", "artifact", "names"),
    [
        ("overlap at div.card #chart: overlaps h2", "slides/slide_01.html", {"card", "chart"}),
        ("text_clipped at h1: text cut by its own box", "slides/slide_01.html", {"h1"}),
        ("blank at body: no visible text", "slides/slide_01.html", set()),
        ("missing_asset at slide 3: assets/x.png not found", "manuscript.md", set()),
        ("The title overlaps the image", "slides/slide_01.html", set()),
    ],
)
def test_anchors(evidence: str, artifact: str, names: set[str]) -> None:
    assert anchors(evidence, artifact) == names
