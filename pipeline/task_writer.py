"""Task writing: an LLM (or the scripted baseline) turns a source document into a request.

Persona tasks come in two modes: knowledge-grounded (the writer first synthesizes
a short knowledge note for the persona, then writes the request from both) and
open-ended (persona only). Document tasks pair a paper with an audience and a
scenario (arXiv) or ask for a presentation of the attached document (FinePDFs).
A malformed reply is re-asked; a draft that still fails is kept as dropped, with
its reason, so the funnel can count it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Literal, Sequence, TypedDict, TypeVar, Unpack

import pydantic

from core.llm.json_reply import JSONReplyError, ask_json
from core.llm.results import ModelError
from core.prompts import render
from core.protocols import Model
from core.records import Check, CheckClass, Message, ModelUse
from core.run.metering import note_model
from core.seams.drafts import SourceDoc, TaskDraft, WriteJob
from pipeline.personas import parse_persona

PROMPTS = Path(__file__).parent / "prompts"
ROLE = "task_writer"
Reply = TypeVar("Reply", bound=pydantic.BaseModel)


class _Written(TypedDict, total=False):
    """What a writer gives a draft (TaskDraft's fields of the same names)."""

    instruction: str
    language: str
    checks: tuple[Check, ...]
    dropped: str


ZH_AUDIENCES = {
    "beginners": "初学者",
    "intermediate learners": "有一定基础的学习者",
    "domain experts": "领域专家",
    "peer researchers": "同行研究者",
}
ZH_SCENARIOS = {"lecture": "讲座", "seminar": "研讨会报告", "defense": "答辩", "conference talk": "学术会议报告"}


def _draft(job: WriteJob, writer: str, **fields: Unpack[_Written]) -> TaskDraft:
    doc = job.doc
    attachments = (doc.path,) if doc.path else ()
    provenance = (
        doc.provenance | {"mode": job.mode} | ({"audience": job.audience, "scenario": job.scenario} if job.audience else {})
    )
    return TaskDraft(
        draft_id=job.draft_id,
        source=doc.source,
        doc_id=doc.doc_id,
        mode=job.mode,
        writer=writer,
        attachments=attachments,
        provenance=provenance,
        **fields,
    )


class _Note(pydantic.BaseModel):
    topic: str = pydantic.Field(min_length=2)
    note: str = pydantic.Field(min_length=20)


class _CheckItem(pydantic.BaseModel):
    cls: Literal["completeness", "correctness", "visual_design"] = pydantic.Field(alias="class")
    question: str = pydantic.Field(min_length=8, max_length=400)


class _Request(pydantic.BaseModel):
    language: Literal["en", "zh"]
    instruction: str = pydantic.Field(min_length=10)
    checks: list[_CheckItem] = pydantic.Field(default_factory=list, max_length=12)  # the deck's checklist (optional)


class _Keep(pydantic.BaseModel):
    keep: bool
    reason: str = ""


class LLMTaskWriter:
    """Writes tasks with a model behind the `task_writer` role."""

    def __init__(self, model: Model, json_retries: int = 2):
        self.model = model
        self.retries = json_retries
        self.name = f"model:{model.name}"

    async def _ask(self, template: str, schema: type[Reply], **variables: object) -> Reply:
        return await ask_json(self.model, [Message("user", render(PROMPTS, template, **variables))], schema, self.retries)

    async def write(self, job: WriteJob) -> TaskDraft:
        try:
            if job.mode == "document":
                reply = await self._ask(
                    "document_task.j2",
                    _Request,
                    title=job.doc.title,
                    excerpt=job.doc.text[:2000],
                    source=job.doc.source,
                    audience=job.audience,
                    scenario=job.scenario,
                    language=job.language,
                )
            else:
                note = await self._ask("knowledge_note.j2", _Note, persona=job.doc.text) if job.mode == "knowledge" else None
                reply = await self._ask(
                    "persona_task.j2",
                    _Request,
                    persona=job.doc.text,
                    note=note.note if note else "",
                    topic=note.topic if note else "",
                )
        except JSONReplyError as exc:
            return _draft(job, self.name, dropped=exc.reason)
        except ModelError as exc:
            return _draft(job, self.name, dropped=f"model_error:{exc.kind}")
        checks = tuple(
            Check(f"writer-{n:02d}", CheckClass(c.cls), " ".join(c.question.split())) for n, c in enumerate(reply.checks, 1)
        )
        return _draft(job, self.name, instruction=" ".join(reply.instruction.split()), language=reply.language, checks=checks)

    async def keep(self, instruction: str, attached: bool) -> tuple[bool, str]:
        try:
            verdict = await self._ask("quality_gate.j2", _Keep, instruction=instruction, attached=attached)
        except JSONReplyError as exc:
            return False, f"quality judge gave no usable verdict ({exc.reason})"
        except ModelError as exc:
            return False, f"quality judge failed ({exc.kind})"
        return verdict.keep, verdict.reason


class ScriptedTaskWriter:
    """The offline baseline: templated but valid tasks, no model, wholly in the task's language.

    A persona task is grounded in a document of the offline library (the document sources'
    documents), chosen by the words it shares with the persona, in the task's language: the
    scripted policy can only extract, so it is asked about something the corpus holds. A
    Chinese task says who the persona is in Chinese (pipeline.personas); a persona written in
    Chinese makes a Chinese task.
    """

    name = "scripted"
    use = ModelUse("scripted-task-writer", "scripted")

    def __init__(self, min_chars: int = 30, max_chars: int = 3000, library: Sequence[SourceDoc] = ()):
        self.min_chars, self.max_chars = min_chars, max_chars
        self.library = list(library)

    async def write(self, job: WriteJob) -> TaskDraft:
        note_model(ROLE, self.use)
        doc = job.doc
        if job.mode == "document":
            lang = "zh" if job.language == "zh" else "en"
            audience = ZH_AUDIENCES.get(job.audience, job.audience) if lang == "zh" else job.audience
            scenario = ZH_SCENARIOS.get(job.scenario, job.scenario) if lang == "zh" else job.scenario
            text = render(PROMPTS, f"scripted/{doc.source}.{lang}.j2", title=doc.title, audience=audience, scenario=scenario)
            return _draft(job, self.name, instruction=text, language=lang)
        persona = parse_persona(doc.text)
        lang = "zh" if job.language == "zh" or persona.chinese else "en"
        topic = self.topic(doc.text, lang, job.draft_id)
        variant = int(job.draft_id.rsplit("-", 1)[-1]) % 3 if job.draft_id[-1].isdigit() else 0
        who = persona.chinese_phrase() if lang == "zh" else persona.english_phrase()
        text = render(PROMPTS, f"scripted/persona.{lang}.j2", who=who, topic=topic.title if topic else "", variant=variant)
        draft = _draft(job, self.name, instruction=" ".join(text.split()), language=lang)
        return replace(draft, provenance=draft.provenance | {"topic_doc": topic.doc_id}) if topic else draft

    def topic(self, persona: str, language: str, draft_id: str) -> SourceDoc | None:
        """The library document in `language` that shares the most words with the persona (ties: by draft id)."""
        docs = [d for d in self.library if d.language == language and d.title]
        if not docs:
            return None
        words = set(re.findall(r"[a-z]{4,}", persona.lower()))
        salt = int(hashlib.sha1(draft_id.encode()).hexdigest(), 16)
        return max(
            enumerate(docs),
            key=lambda kd: (len(words & set(re.findall(r"[a-z]{4,}", kd[1].text.lower()))), (kd[0] + salt) % len(docs)),
        )[1]

    async def keep(self, instruction: str, attached: bool) -> tuple[bool, str]:
        note_model(ROLE, self.use)
        if not self.min_chars <= len(instruction) <= self.max_chars:
            return False, f"length {len(instruction)} outside [{self.min_chars}, {self.max_chars}]"
        return True, "rule checks passed (scripted gate)"
