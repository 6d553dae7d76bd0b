"""The two-step judge against the fake OpenAI server (malformed replies, the cache) and the scripted judge's rules."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.config import LLMConfig
from core.defects import Defect
from core.llm.players import Players
from core.seams.judging import PageFacts, SlideView
from eval.config import JudgeConfig
from eval.scripted_judge import (
    LABEL,
    ScriptedDescriber,
    ScriptedJudge,
    word_equivalents,
)
from eval.slide_judge import DeckJudgement, build_judging
from eval.slides import load_deck
from fakes.openai_server import FakeOpenAIServer
from tests.eval.helpers import ENGLISH, GOOD_DESCRIPTION, GOOD_SCORES, export_workspace, scripted_replies, slide_image


def judge_config(url: str, model: str = "fake-judge", retries: int = 2) -> JudgeConfig:
    return JudgeConfig(endpoint=LLMConfig(base_url=url, model=model, max_retries=0, temperature=0.0), json_retries=retries)


def judge_deck(cfg: JudgeConfig, slides: list[SlideView], cache: Path) -> DeckJudgement:
    async def go() -> DeckJudgement:
        async with Players() as players:
            return await build_judging(cfg, cache, players).deck(slides)

    return asyncio.run(go())


@pytest.fixture
def deck(tmp_path: Path) -> list[SlideView]:
    export_workspace(tmp_path, "t", "16:9", [ENGLISH, ENGLISH])
    return load_deck(tmp_path / "rollouts" / "t", tmp_path / "pages")


def test_malformed_replies_are_asked_again_until_they_parse(tmp_path: Path, deck: list[SlideView]) -> None:
    policy = scripted_replies(
        describer=["This slide looks nice!", f"Here it is:\n```json\n{GOOD_DESCRIPTION}\n```"],
        judge=[
            '{"content": {"score": 7, "reason": "great"}, "style": {"score": 3, "reason": "ok"}}',
            '{"content": {"score": "4.0", "reason": "x"}, "style": {"score": 3}}',
            f"{GOOD_SCORES} -- done",
        ],
    )
    with FakeOpenAIServer(policy, strict="vllm-glm") as srv:
        judgement = judge_deck(judge_config(srv.url), deck[:1], tmp_path / "cache")
        requests = srv.requests
    assert judgement.error is None and (judgement.content, judgement.style) == (4, 3)
    assert judgement.slides[0].scores.content.reason == "clear bullets"
    assert len(requests) == 5  # 2 describer + 3 judge turns
    reasks = [m["content"] for m in requests[-1]["messages"][2::2]]  # what the judge was told after each bad reply
    assert "content.score" in reasks[0] and "style.reason" in reasks[1]


def test_a_judge_that_never_replies_in_json_leaves_the_deck_unjudged(tmp_path: Path, deck: list[SlideView]) -> None:
    with FakeOpenAIServer(scripted_replies([GOOD_DESCRIPTION], ["I would give it a four."]), strict="vllm-glm") as srv:
        judgement = judge_deck(judge_config(srv.url, retries=1), deck, tmp_path / "cache")
    assert (judgement.content, judgement.style) == (None, None)
    assert "malformed_json" in judgement.error
    assert not (tmp_path / "cache" / "scores").exists()  # nothing cached: a rerun asks again
    with FakeOpenAIServer(scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES]), strict="vllm-glm") as srv:
        judgement = judge_deck(judge_config(srv.url), deck, tmp_path / "cache")
        assert len(srv.requests) == 2  # the descriptions were cached; only the scores are asked for
    assert (judgement.content, judgement.style) == (4, 3)


def test_cached_slides_cost_no_model_call(tmp_path: Path, deck: list[SlideView]) -> None:
    with FakeOpenAIServer(scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES]), strict="vllm-glm") as srv:
        first = judge_deck(judge_config(srv.url), deck, tmp_path / "cache")
        assert len(srv.requests) == 4
        again = judge_deck(judge_config(srv.url), load_deck(deck[0].png.parents[1], tmp_path / "pages"), tmp_path / "cache")
        assert len(srv.requests) == 4
        judge_deck(judge_config(srv.url, model="another-judge"), deck, tmp_path / "cache")
        assert len(srv.requests) == 4 + 4  # a new judge: the describer and the judge are both new identities
    assert first == again


def test_a_separate_describer_keeps_its_descriptions_when_the_judge_changes(tmp_path: Path, deck: list[SlideView]) -> None:
    with FakeOpenAIServer(scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES]), strict="vllm-glm") as srv:
        cfg = judge_config(srv.url)
        cfg.describer.model = "fake-describer"
        judge_deck(cfg, deck, tmp_path / "cache")
        cfg.endpoint.model = "another-judge"
        judge_deck(cfg, deck, tmp_path / "cache")
        models = [r["model"] for r in srv.requests]
    assert models.count("fake-describer") == 2 and models.count("fake-judge") == 2 and models.count("another-judge") == 2


# ---------------------------------------------------------------- the scripted judge


COLOURFUL = [(20, 20, 300, 50, "#1f4e79"), (20, 70, 150, 160, "#e67e22"), (170, 70, 300, 160, "#27ae60")]


def scripted(slide: SlideView) -> tuple[int, int, str]:
    async def go():
        description = await ScriptedDescriber().describe(slide)
        return await ScriptedJudge().score(slide, description), description

    scores, description = asyncio.run(go())
    return scores.content.score, scores.style.score, description.content + scores.style.reason


@pytest.mark.parametrize(
    ("words", "images", "boxes", "defects", "expected"),
    [
        (0, 0, [], [], (1, 1)),  # blank
        (40, 1, COLOURFUL, [], (5, 5)),  # balanced text, an image, colour and visual elements
        (200, 0, COLOURFUL, [], (2, 5)),  # text-heavy
        (40, 0, [(20, 20, 300, 30, "#333333")], [], (4, 3)),  # no image, nearly monochrome, little covered
        (40, 1, COLOURFUL, [("overlap", "critical")], (5, 3)),  # a measured critical overlap costs style two points
        (40, 1, COLOURFUL, [("text_clipped", "major")], (4, 4)),  # clipped text costs content and style one
    ],
)
def test_scripted_judge_rules(tmp_path: Path, words, images, boxes, defects, expected) -> None:
    slide = SlideView(
        1,
        slide_image(tmp_path / "s.png", boxes=boxes),
        PageFacts(" ".join(["word"] * words), images),
        tuple(Defect(c, s, "e", "d") for c, s in defects),
    )
    content, style, text = scripted(slide)
    assert (content, style) == expected
    assert LABEL in text


def test_scripted_judge_on_bare_images_and_cjk_text(tmp_path: Path) -> None:
    content, style, text = scripted(SlideView(1, slide_image(tmp_path / "s.png", boxes=COLOURFUL)))
    assert "no text layer" in text and (content, style) == (3, 5)
    assert word_equivalents("注意力机制 attention 2017") == 2 + 3


def test_the_scripted_judge_sees_what_the_content_gate_sees(tmp_path: Path) -> None:
    other = "Training runs on every position of the sequence at once, so it needs far fewer sequential steps."
    export_workspace(tmp_path, "repeated", "16:9", [ENGLISH, ENGLISH], headings=["Attention", "Attention"])
    export_workspace(tmp_path, "sound", "16:9", [ENGLISH, other], headings=["Attention", "Training"])
    request = "Make a deck about attention."
    repeated = load_deck(tmp_path / "rollouts" / "repeated", tmp_path / "pages", "en", request)
    sound = load_deck(tmp_path / "rollouts" / "sound", tmp_path / "pages", "en", request)
    assert [s.content for s in repeated] == [("duplicate_slides", "repeated_text")] * 2 and not any(s.content for s in sound)
    assert repeated[0].digest == sound[0].digest  # the same image: only the content checks tell them apart
    cache = tmp_path / "cache"
    sound_scores = judge_deck(JudgeConfig(), sound, cache).slides[0].scores.content
    repeated_scores = judge_deck(JudgeConfig(), repeated, cache).slides[0].scores.content
    assert repeated_scores.score == sound_scores.score - 2
    assert "failed content checks: duplicate_slides, repeated_text" in repeated_scores.reason and LABEL in repeated_scores.reason
