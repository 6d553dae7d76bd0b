"""What the task writer (`core.protocols.TaskWriter`) is given, a source document and a job, and what it writes: a draft."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Optional

from core.records import SCHEMA_VERSION, Check, Origin, Record
from core.run.usage import RoleUsage


@dataclass(frozen=True)
class SourceDoc:
    source: str  # persona | arxiv | finepdfs
    doc_id: str
    text: str  # the persona, or an excerpt of the document
    title: str = ""
    language: str = "en"
    path: str | None = None  # the file to attach (documents)
    provenance: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WriteJob:
    draft_id: str
    doc: SourceDoc
    mode: str  # knowledge | open | document
    language: str  # the language asked for (persona tasks: a hint the LLM may override)
    audience: str = ""
    scenario: str = ""


@dataclass(frozen=True)
class TaskDraft(Record):
    """A written request before cleaning; stored as a unit so a rerun never rewrites it."""

    kind: ClassVar[str] = "task_draft"
    draft_id: str
    source: str
    doc_id: str
    mode: str
    writer: str  # "model:<id>" or "scripted"
    instruction: str = ""
    language: str = ""
    attachments: tuple[str, ...] = ()
    provenance: dict[str, str] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()  # the checks a model writer wrote with the request (pipeline/checklists.py adds the rules')
    dropped: Optional[str] = None  # why the draft is unusable (malformed_json, model_error:..., ...)
    usage: dict[str, RoleUsage] = field(default_factory=dict)  # the writer's calls for this draft
    origin: Origin = field(default_factory=Origin)  # the writer's templates and model
    schema_version: int = SCHEMA_VERSION
