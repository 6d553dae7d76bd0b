"""Deck generation: the scripted baseline end to end, a fake model that makes mistakes and fixes them
through inspection, and the ablation modes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pptx import Presentation

from agents.config import AgentConfig, SandboxConfig, ToolsConfig
from agents.policies.scripted import ScriptedPolicy
from agents.research.runtime import RESOURCE_KEY, build_research
from agents.workflow import GenerationEnv, generate_deck
from core.config import LLMConfig
from core.language import detect_language
from core.llm.client import ModelClient
from core.pdf import pymupdf
from core.records import Constraints, Task, Trajectory
from deck.config import DeckConfig
from fakes.openai_server import FakeOpenAIServer, Reply
from filters.config import FiltersConfig
from filters.constraints import check_deck
from filters.content import check_deck as check_content
from render.renderer import Renderer
from tests.rendered import session_loop

SHARED = Path(__file__).parents[3] / "shared" / "data"
pytestmark = [pytest.mark.chromium, session_loop]


def env(renderer: Renderer, workspace: Path, model_for, **modes: object) -> GenerationEnv:
    research = build_research(ToolsConfig(), workspace)
    return GenerationEnv(
        agent=AgentConfig(max_steps=60),
        sandbox=SandboxConfig(),
        renderer=renderer,
        model_for=model_for,
        resources={RESOURCE_KEY: research},
        removed_tools=frozenset(research.unavailable_tools()),
        **modes,
    )


def scripted(role, brief):
    return ScriptedPolicy(role, brief)


def tool_names(trajectory: Trajectory) -> set[str]:
    return {t["function"]["name"] for t in json.loads(trajectory.tools_json)}


@pytest.mark.parametrize(
    ("pdf", "language", "aspect", "slides"),
    [("arxiv_1706.03762.pdf", "en", "16:9", 6), ("edu_zh_thu-numerical-analysis-notes.pdf", "zh", "4:3", 5)],
)
async def test_scripted_policy_makes_a_valid_deck(
    renderer: Renderer, tmp_path: Path, pdf: str, language: str, aspect: str, slides: int
) -> None:
    constraints = Constraints(slides, slides, aspect, language)
    task = Task(f"t-{language}", "arxiv", "Present the attached document.", language, (str(SHARED / pdf),), constraints)
    outcome = await generate_deck(task, tmp_path, env(renderer, tmp_path, scripted, policy="scripted"))
    assert outcome.status == "done", outcome.failure
    report = check_deck(tmp_path / "deck.pdf", constraints, FiltersConfig())
    assert report.score == 1.0, report.checks
    content = check_content(tmp_path / "deck.pdf", FiltersConfig(), language, task.instruction)
    assert content.passed, content.reasons()  # the baseline's deck reads as sound: no repeats, no cut sentences
    for agent in ("researcher", "presenter"):
        trajectory = Trajectory.from_json((tmp_path / f"trajectory_{agent}.json").read_text())
        assert trajectory.status == "finalized" and trajectory.policy == "scripted"
        assert any(c.name.startswith("inspect_") for m in trajectory.messages for c in m.tool_calls)
    assert len(list((tmp_path / "previews").glob("*.png"))) == slides
    deck = Presentation(str(tmp_path / "deck.pptx"))  # editable: the slides' titles are text, the notes the manuscript's sections
    assert len(deck.slides) == slides and all(
        any(s.has_text_frame and s.text_frame.text.strip() for s in slide.shapes) for slide in deck.slides
    )
    notes = [slide.notes_slide.notes_text_frame.text for slide in deck.slides if slide.has_notes_slide]
    assert len(notes) == slides and all(note.lstrip().startswith("#") for note in notes)
    assert json.loads((tmp_path / "deck_defects.json").read_text())["pptx"] == {"mode": "editable"}


async def test_a_fidelity_check_that_cannot_run_is_recorded_and_the_deck_stands(renderer: Renderer, tmp_path: Path) -> None:
    task = Task(
        "t-check",
        "manual",
        "A short talk about topic number 3 for a general audience.",
        "en",
        (),
        Constraints(3, 3, "16:9", "en"),
    )
    deck = DeckConfig(check=True, soffice=str(tmp_path / "no-soffice"))
    outcome = await generate_deck(task, tmp_path, env(renderer, tmp_path, scripted, policy="scripted", deck=deck))
    assert outcome.status == "done", outcome.failure
    pptx = json.loads((tmp_path / "deck_defects.json").read_text())["pptx"]
    assert pptx["mode"] == "editable" and "is not installed: Debian libreoffice-impress" in pptx["fidelity"]["error"]


OVERFLOWING = (
    '<html><body style="margin:0;width:1280px;height:720px;overflow:hidden"><div style="font-size:90px">{}</div></body></html>'
)
FITTING = '<html><body style="margin:0;width:1280px;height:720px"><h1 style="font-size:40px">{}</h1><img src="../assets/chart.png" style="width:300px"></body></html>'


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_scripted_slides_stay_in_the_task_language_when_the_corpus_mixes_languages(
    renderer: Renderer, tmp_path: Path, language: str
) -> None:
    """With no attachment the Researcher draws on the offline corpus, which holds English and Chinese documents."""
    instruction = {
        "en": "A short talk about topic number 3 for a general audience.",
        "zh": "面向大众的关于第三个主题的简短演讲。",
    }[language]
    task = Task(f"t-{language}", "manual", instruction, language, (), Constraints(4, 4, "16:9", language))
    outcome = await generate_deck(task, tmp_path, env(renderer, tmp_path, scripted, policy="scripted"))
    assert outcome.status == "done", outcome.failure
    with pymupdf.open(tmp_path / "deck.pdf") as deck:
        pages = [page.get_text() for page in deck]
    assert len(pages) == 4
    assert all(detect_language(text).lang == language for text in pages), pages
    content = check_content(tmp_path / "deck.pdf", FiltersConfig(), language, instruction)
    assert content.passed, content.reasons()


def clumsy_model(body: dict) -> Reply:
    """A model that makes realistic mistakes and reacts to what inspection shows it."""
    messages = body["messages"]
    last = next((m["content"] for m in reversed(messages) if m["role"] == "tool"), "")
    turns = sum(m["role"] == "assistant" for m in messages)
    if messages[0]["content"].startswith("You are the Researcher"):
        if turns == 0:  # one slide where two are asked for, and an image that is not there
            return Reply("", [("write_file", {"path": "manuscript.md", "content": "# Intro\n\n![chart](assets/chart.png)\n"})])
        if "No issues found." in last:
            return Reply("", [("finalize", {"outcome": "manuscript.md"})])
        if "missing_asset" in last or "slide_count" in last:
            fixed = "# Intro\n\n![a bar chart](assets/chart.png)\n\n---\n\n# Results\n\n- it works\n"
            copy = "mkdir -p assets && cp attachments/chart.png assets/chart.png"
            return Reply(
                "", [("execute_command", {"command": copy}), ("write_file", {"path": "manuscript.md", "content": fixed})]
            )
        return Reply("", [("inspect_manuscript", {"md_file": "manuscript.md"})])
    written = [
        c["function"]["arguments"]
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "write_file"
    ]
    if turns == 0:  # far too much text for one slide
        return Reply("", [("write_file", {"path": "slides/slide_01.html", "content": OVERFLOWING.format("word " * 400)})])
    if last.startswith("Wrote"):
        return Reply("", [("inspect_slide", {"html_file": json.loads(written[-1])["path"]})])
    if re.search(r"^(overflow|text_clipped) ", last, re.MULTILINE):
        return Reply("", [("write_file", {"path": "slides/slide_01.html", "content": FITTING.format("Intro")})])
    if "slide_02" not in " ".join(written):
        return Reply("", [("write_file", {"path": "slides/slide_02.html", "content": FITTING.format("Results")})])
    return Reply("", [("finalize", {"outcome": "slides"})])


async def test_inspection_catches_and_fixes_a_models_mistakes(renderer: Renderer, tmp_path: Path) -> None:
    from PIL import Image

    attachment = tmp_path / "chart.png"
    Image.new("RGB", (320, 200), "steelblue").save(attachment)
    task = Task("t-fake", "manual", "Two slides about our results.", "en", (str(attachment),), Constraints(2, 2, "16:9", None))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOpenAIServer(clumsy_model, strict="vllm-glm") as srv:
        async with ModelClient(LLMConfig(base_url=srv.url, model="clumsy"), "agent") as model:
            outcome = await generate_deck(task, workspace, env(renderer, workspace, lambda role, brief: model))
    assert outcome.status == "done", outcome.failure
    assert srv.refused == []
    researcher, presenter = outcome.trajectories
    seen = [m.content for m in researcher.messages if m.name == "inspect_manuscript"]
    assert "missing_asset" in seen[0] and "slide_count" in seen[0] and "No issues found." in seen[-1]
    slide_reports = [m.content for m in presenter.messages if m.name == "inspect_slide"]
    assert re.search(r"^(overflow|text_clipped) ", slide_reports[0], re.MULTILINE) and "No defects measured." in slide_reports[1]
    assert outcome.slides == 2 and outcome.defects == 0
    assert pymupdf.open(workspace / "deck.pdf").page_count == 2
    assert "(320x200, aspect 1.60:1)" in (workspace / "manuscript.md").read_text()  # the hand-off notes image sizes


async def test_ablation_modes_change_the_offered_tools(renderer: Renderer, tmp_path: Path) -> None:
    task = Task("t-abl", "manual", "A talk about attention in neural networks.", "en", (), Constraints(3, 3, "16:9", None))
    grounded = await generate_deck(task, tmp_path / "a", env(renderer, tmp_path / "a", scripted, policy="scripted"))
    blind = await generate_deck(
        task, tmp_path / "b", env(renderer, tmp_path / "b", scripted, policy="scripted", reflection="none")
    )
    single = await generate_deck(
        task, tmp_path / "c", env(renderer, tmp_path / "c", scripted, policy="scripted", agents="single")
    )
    researcher, presenter = (tool_names(t) for t in grounded.trajectories)
    assert "inspect_manuscript" in researcher and "inspect_slide" in presenter and "search_web" in researcher
    assert not {"inspect_manuscript", "inspect_slide"} & set().union(*(tool_names(t) for t in blind.trajectories))
    (one,) = single.trajectories
    assert one.agent == "single" and researcher | presenter <= tool_names(one)
    assert [o.status for o in (grounded, single)] == ["done", "done"]
