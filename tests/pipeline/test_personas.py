"""The scripted task writer's persona tasks: wholly in the task's language, grounded in the offline library."""

from __future__ import annotations

import asyncio
import re

import pytest

from core.language import detect_language
from core.seams.drafts import SourceDoc, WriteJob
from pipeline.personas import parse_persona
from pipeline.task_writer import ScriptedTaskWriter

LIBRARY = [
    SourceDoc(
        "arxiv",
        "arxiv-nmt",
        "Neural machine translation with attention: training and results.",
        "Neural Machine Translation",
        "en",
    ),
    SourceDoc("finepdfs", "edu-na", "数值分析讲义：插值、积分与线性方程组的数值解法。", "数值分析", "zh"),
]


@pytest.mark.parametrize(
    ("persona", "chinese"),
    [
        (
            "A career consultant from Cape Town who has no strong feelings towards Israel or epidemiology",
            "一位来自 Cape Town 的职业顾问",
        ),
        (
            "Tanja Mehlstäubler, a German physicist known for her work with quantum optical clocks",
            "Tanja Mehlstäubler，一位德国物理学家",
        ),
        ("an African American parent living in Charlottesville", "一位来自 Charlottesville 的 African American 家长"),
        ("I'm an elderly shop owner who has been running a family-owned hardware store for decades.", "一位年长的店主"),
        ("An innovative engineer developing automated car washing systems", "一位工程师"),
        ("A First Order BB unit tasked with hunting down BB-8", ""),  # no known role: left out, never pasted
        (
            "一个兰州本地的摄影爱好者，对城市的发展以及新兴建筑充满了兴趣。",
            "一个兰州本地的摄影爱好者，对城市的发展以及新兴建筑充满了兴趣",
        ),
    ],
)
def test_a_persona_in_chinese_keeps_names_and_leaves_out_what_it_cannot_say(persona: str, chinese: str) -> None:
    assert parse_persona(persona).chinese_phrase() == chinese


def test_the_english_phrase_stops_at_text_in_another_script() -> None:
    persona = parse_persona("An IT professional who is not very fond of JavaScript, 显然我对JS的吐槽每天都尚未完结。")
    assert not persona.chinese and persona.english_phrase() == "an IT professional who is not very fond of JavaScript"


def write(job: WriteJob, library: list[SourceDoc] = LIBRARY) -> str:
    draft = asyncio.run(ScriptedTaskWriter(library=library).write(job))
    assert draft.dropped is None
    return draft.language, draft.instruction, draft.provenance


@pytest.mark.parametrize("variant", range(3))
def test_a_chinese_persona_task_pastes_no_english_and_asks_about_a_chinese_document(variant: int) -> None:
    persona = SourceDoc(
        "persona", "p1", "A career consultant from Cape Town who has no strong feelings towards Israel or epidemiology"
    )
    language, text, provenance = write(WriteJob(f"persona-{variant:05d}", persona, "open", "zh"))
    assert language == "zh" and detect_language(text).lang == "zh"
    assert "《数值分析》" in text and "来自 Cape Town 的职业顾问" in text and provenance["topic_doc"] == "edu-na"
    assert set(re.findall(r"[A-Za-z]+", text)) <= {"Cape", "Town"}  # names only


def test_a_persona_written_in_chinese_makes_a_chinese_task_and_an_english_one_an_english_task() -> None:
    chinese = SourceDoc("persona", "p2", "一个兰州本地的摄影爱好者，对城市的发展以及新兴建筑充满了兴趣。")
    language, text, _ = write(WriteJob("persona-00003", chinese, "open", "en"))
    assert language == "zh" and "兰州本地的摄影爱好者" in text
    english = SourceDoc("persona", "p3", "A data analyst responsible for providing clean data for machine translation models")
    language, text, provenance = write(WriteJob("persona-00001", english, "open", "en"))
    assert language == "en" and '"Neural Machine Translation"' in text and not re.search(r"[\u4e00-\u9fff]", text)
    assert provenance["topic_doc"] == "arxiv-nmt"


def test_without_a_library_the_task_is_about_the_persona_s_field() -> None:
    persona = SourceDoc("persona", "p1", "A registered nurse who works night shifts")
    language, text, provenance = write(WriteJob("persona-00000", persona, "open", "zh"), library=[])
    assert language == "zh" and "我的领域" in text and "一位护士" in text and "topic_doc" not in provenance
