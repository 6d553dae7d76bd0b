"""Typed records shared by every stage: Task, Trajectory, Rollout, Verdict.

Records are frozen dataclasses. Their Arrow schemas are derived from the type
hints (one codec for all records), so a record round-trips losslessly through
Parquet and JSON; every record carries `schema_version`, also stored in the Arrow
schema's metadata. A record of an older version reads as the current one, with the
fields added since at their defaults (version 2 added `origin` and `usage`); a newer
or unknown version is a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Optional, TypeVar

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from core.cli import InputError
from core.codec import RecordError, arrow_type, decode, encode, hints, init_fields, optional_inner
from core.iterate import batched
from core.run.usage import RoleUsage

SCHEMA_VERSION = 4
# 2 added Origin (templates and models that made a record) and unit usage; 3 added how a trajectory's model was
# called (Trajectory.profile, .vision) and the digest of the request each reply answered (Message.sent); 4 keeps a
# rollout's tokens and cost in its usage alone (Rollout.prompt_tokens, .completion_tokens, .cost_usd went; a
# scripted agent's estimated tokens are Rollout.estimated_tokens)
READABLE_VERSIONS = (1, 2, 3, 4)
ROW_GROUP = 1000  # rows per Parquet row group: what a batch write holds, what a keyed read decodes (core.run.keyed)

R = TypeVar("R", bound="Record")


@dataclass(frozen=True)
class Record:
    """Base of every stored record: schema versioned, Arrow/JSON codec."""

    kind: ClassVar[str] = "record"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = encode(self)  # a dataclass encodes to a dict
        return data

    def to_json(self) -> str:
        # orjson walks the dataclasses, tuples and dicts itself: a 0.85 MB trajectory (a worker
        # checkpoints each running one every 2 s, on its event loop) takes 1.8 ms, 11.9 through
        # to_dict and json.dumps. Fields come in definition order, dict keys sorted; numpy scalars
        # become numbers; NaN and infinities become null (JSON has none).
        return orjson.dumps(self, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode()

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        version = data.get("schema_version", SCHEMA_VERSION)
        if version not in READABLE_VERSIONS:
            raise RecordError(f"{cls.__name__} has schema_version {version}; this code reads {READABLE_VERSIONS}")
        fields = {k: v for k, v in data.items() if k != "schema_version"}
        return decode(cls, cls.upgrade(fields, version) if version < SCHEMA_VERSION else fields)  # an older one reads as current

    @classmethod
    def upgrade(cls, fields: dict[str, Any], version: int) -> dict[str, Any]:
        """The fields of a record of an older `version` as this version has them (fields added since take their defaults)."""
        return fields

    @classmethod
    def from_json(cls: type[R], text: str) -> R:
        return cls.from_dict(orjson.loads(text))

    @classmethod
    def arrow_schema(cls) -> pa.Schema:
        return _schema(cls)  # type: ignore[arg-type]  # a class is hashable; mypy checks a type[X] as an X (python/mypy#20409)


class RolloutStatus(StrEnum):
    done = "done"  # the deck was made and exported
    failed = "failed"  # see its failure (core/failures.py)


class TrajectoryStatus(StrEnum):
    running = "running"  # a checkpoint of an agent still at work
    finalized = "finalized"  # finalize accepted the agent's outcome
    failed = "failed"  # see its failure (core/failures.py)


# ---------------------------------------------------------------- provenance


@dataclass(frozen=True)
class ModelUse:
    """A model (or rule-based stand-in) that played a role, with its sampling."""

    model: str
    backend: str = "openai"  # openai | local | scripted | rules
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    max_tokens: Optional[int] = None

    @property
    def label(self) -> str:
        if self.backend in ("scripted", "rules"):
            return f"{self.model} ({self.backend}, not a model)"
        sampling = ", ".join(
            f"{k}={v:g}"
            for k, v in (("t", self.temperature), ("top_p", self.top_p), ("max_tokens", self.max_tokens))
            if v is not None
        )
        return f"{self.model} [{self.backend}; {sampling}]"


@dataclass(frozen=True)
class Origin:
    """What made a record: the prompt templates rendered (id -> content hash) and the model per role."""

    templates: dict[str, str] = field(default_factory=dict)
    models: dict[str, ModelUse] = field(default_factory=dict)

    def __or__(self, other: Origin) -> Origin:
        return Origin(self.templates | other.templates, self.models | other.models)


# ---------------------------------------------------------------- task


@dataclass(frozen=True)
class Constraints:
    """Verifiable constraints; None means free (not checked)."""

    slides_min: Optional[int] = None
    slides_max: Optional[int] = None
    aspect_ratio: Optional[str] = None  # "16:9" | "4:3" | "A1"
    language: Optional[str] = None  # ISO 639-1

    @property
    def free(self) -> bool:
        return self.slides_min is None and self.aspect_ratio is None and self.language is None


class CheckClass(StrEnum):
    """PresentBench's five classes of binary checks on a deck (docs/evaluation.md, "Checklists")."""

    fundamentals = "fundamentals"  # the request's hard requirements: slide count, language, aspect, a title...
    visual_design = "visual_design"  # visual design and layout
    completeness = "completeness"  # the content the request and its source call for is there
    correctness = "correctness"  # what the deck says is right
    fidelity = "fidelity"  # each slide against the source (written per slide when the deck is judged)


@dataclass(frozen=True)
class Check:
    """One yes/no question about a finished deck, answered yes, no or not applicable by the checklist judge."""

    check_id: str  # unique in its task's checklist
    cls: str  # a CheckClass
    question: str  # phrased so that "yes" is the good answer
    # What decides it by rule, where anything does (the offline stand-in judge answers the others "not applicable"):
    # "slides:MIN-MAX", "language:CODE", "aspect:W:H", "mentions:TEXT" (the deck's text contains it); "" for none.
    rule: str = ""


@dataclass(frozen=True)
class Task(Record):
    kind: ClassVar[str] = "task"
    task_id: str
    source: str  # persona | arxiv | finepdfs | manual
    instruction: str
    language: str
    attachments: tuple[str, ...] = ()
    constraints: Constraints = field(default_factory=Constraints)
    provenance: dict[str, str] = field(default_factory=dict)  # source id, licence, ...
    split: Optional[str] = None  # train | eval
    origin: Origin = field(default_factory=Origin)  # the writer's and the quality gate's templates and models
    checklist: tuple[Check, ...] = ()  # written with the task (pipeline/checklists.py); judged by eval.run
    checklist_by: str = ""  # what wrote the checklist: "rules: ..." or the model and template
    schema_version: int = SCHEMA_VERSION


# ---------------------------------------------------------------- trajectory


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of the prompt tokens, those the server served from its prompt cache

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text exactly as the model produced it


@dataclass(frozen=True)
class Message:
    role: str  # system | user | assistant | tool
    content: str = ""
    images: tuple[str, ...] = ()  # workspace-relative image paths, in order
    reasoning: Optional[str] = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: Optional[str] = None
    name: Optional[str] = None  # the tool's name on tool messages
    kind: str = "model"  # prompt | model | tool | critic | warning: who put it there
    sent: Optional[str] = None  # a model's reply: the digest of the request it answered (core.llm.wire.digest)


@dataclass(frozen=True)
class Step:
    index: int
    started_at: float  # unix seconds
    model_s: float
    tools_s: float
    usage: Usage = field(default_factory=Usage)
    tool_names: tuple[str, ...] = ()
    error: Optional[str] = None
    progress: bool = False  # the turn changed a file or brought a result not seen before (agents/guards.py)


@dataclass(frozen=True)
class CriticInjection:
    step: int
    message_index: int  # index in Trajectory.messages of the injected assistant message
    critic_model: str
    findings_json: str  # the critic's structured findings
    observation_ref: str  # what the critic saw (tool, artifact path, image path)


@dataclass(frozen=True)
class Trajectory(Record):
    kind: ClassVar[str] = "trajectory"
    task_id: str
    agent: str  # researcher | presenter | single
    model: str
    policy: str = "model"  # model | scripted (a rule-based baseline, never a model)
    messages: tuple[Message, ...] = ()
    steps: tuple[Step, ...] = ()
    injections: tuple[CriticInjection, ...] = ()
    tools_json: str = "[]"  # the tool schemas offered to the agent
    status: str = TrajectoryStatus.running  # a TrajectoryStatus
    failure: Optional[str] = None  # e.g. environment/context_overflow
    outcome: Optional[str] = None  # finalize's argument
    origin: Origin = field(default_factory=Origin)  # this agent's prompt templates and models (the critic's too)
    # How its model was called (core.llm.conversation): the profile its requests followed (None: written before
    # profiles; the export then uses export.profile) and whether it read images.
    profile: Optional[str] = None
    vision: bool = True
    schema_version: int = SCHEMA_VERSION

    @property
    def usage(self) -> Usage:
        return sum((s.usage for s in self.steps), Usage())


# ---------------------------------------------------------------- rollout and verdict


@dataclass(frozen=True)
class Rollout(Record):
    kind: ClassVar[str] = "rollout"
    task_id: str
    status: str  # a RolloutStatus
    failure: Optional[str] = None  # category/subkind, e.g. environment/timeout
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> run-relative path
    steps: dict[str, int] = field(default_factory=dict)  # agent -> steps
    tool_counts: dict[str, int] = field(default_factory=dict)
    injections: int = 0
    findings: dict[str, int] = field(default_factory=dict)  # critic findings by category (injected or not)
    wall_s: float = 0.0
    attempt: int = 1
    policy: str = "model"
    usage: dict[str, RoleUsage] = field(default_factory=dict)  # every model call of the rollout, by role: its tokens, cost
    # A scripted (rule-based) agent's turns by role: the tokens a model would have been sent and written, estimated.
    # No call was made, so nothing is spent and the ledger never counts them.
    estimated_tokens: dict[str, Usage] = field(default_factory=dict)
    origin: Origin = field(default_factory=Origin)
    schema_version: int = SCHEMA_VERSION

    @property
    def cost_usd(self) -> float:
        """What its model calls cost, where priced (core.run.usage.RoleUsage.cost_usd)."""
        return sum((u.cost_usd for u in self.usage.values()), 0.0)

    def tokens_by_role(self) -> dict[str, Usage]:
        """Prompt and completion tokens by role: the model calls' counts, and a scripted agent's estimates."""
        counted = {role: Usage(u.prompt_tokens, u.completion_tokens) for role, u in self.usage.items()}
        return counted | {role: u for role, u in self.estimated_tokens.items() if role not in counted}

    @property
    def tokens(self) -> int:
        return sum(u.total for u in self.tokens_by_role().values())

    @classmethod
    def upgrade(cls, fields: dict[str, Any], version: int) -> dict[str, Any]:
        """Before 4 a rollout kept its tokens by role and its cost beside its usage (filled from it); what it counted
        for a role its usage does not name was a scripted agent's estimate."""
        prompt = decode(dict[str, int], fields.pop("prompt_tokens", None))
        completion = decode(dict[str, int], fields.pop("completion_tokens", None))
        fields.pop("cost_usd", None)
        usage = fields.get("usage") or ()
        named = set(usage) if isinstance(usage, dict) else {item["key"] for item in usage}
        fields["estimated_tokens"] = {
            role: {"prompt_tokens": n, "completion_tokens": completion.get(role, 0)}
            for role, n in prompt.items()
            if role not in named
        }
        return fields


@dataclass(frozen=True)
class Verdict(Record):
    kind: ClassVar[str] = "verdict"
    task_id: str
    gate: str  # constraint | consistency | quality
    passed: bool
    category: Optional[str] = None  # environment | constraint | consistency | quality
    score: Optional[float] = None
    reasons: tuple[str, ...] = ()
    usage: dict[str, RoleUsage] = field(default_factory=dict)  # the judge's calls for this verdict
    origin: Origin = field(default_factory=Origin)
    schema_version: int = SCHEMA_VERSION


REPLICA_MARK = "~"  # a task's k-th extra rollout (rollouts.per_task) is keyed <task_id>~k


def rollout_id(task_id: str, replica: int) -> str:
    """The key of a task's `replica`-th rollout: the task's id for the first (a run of one rollout per task is keyed by
    its tasks, as before), `<task_id>~k` for the k-th extra one. Rollouts, workspaces, verdicts and samples carry it
    as their `task_id`."""
    return task_id if replica == 0 else f"{task_id}{REPLICA_MARK}{replica}"


def task_of(key: str) -> str:
    """The task id of a rollout key (`rollout_id`'s inverse)."""
    return key.split(REPLICA_MARK, 1)[0]


def replica_of(key: str) -> int:
    """Which of its task's rollouts a rollout key names (0: the first)."""
    _, mark, replica = key.partition(REPLICA_MARK)
    return int(replica) if mark else 0


def verdict_unit(task_id: str, gate: str) -> str:
    """The unit id of a task's verdict by one gate (units/verdicts/<task_id>__<gate>.json)."""
    return f"{task_id}__{gate}"


@dataclass(frozen=True)
class StageDone(Record):
    """Marks a whole stage finished, with its figures (a JSON object)."""

    kind: ClassVar[str] = "stage_done"
    stage: str
    figures_json: str = "{}"
    schema_version: int = SCHEMA_VERSION


# ---------------------------------------------------------------- Parquet IO


def write_parquet(records: Iterable[Record], path: Path, cls: type[Record]) -> None:
    """Write records of one class as a Parquet file (not atomic: see core.run.store), `ROW_GROUP` at a time: memory
    stays flat however many, and a reader can fetch a few by key (core.run.keyed)."""
    schema = cls.arrow_schema()
    with pq.ParquetWriter(path, schema) as writer:
        for chunk in batched(records, ROW_GROUP):
            writer.write_table(pa.Table.from_pylist([encode(r, arrow=True) for r in chunk], schema=schema))


def read_parquet(path: Path, cls: type[R]) -> list[R]:
    return list(iter_parquet(path, cls))


def iter_parquet(path: Path, cls: type[R]) -> Iterator[R]:
    """The records of a Parquet file, `ROW_GROUP` at a time; RecordError when its schema_version is not readable."""
    parquet = readable_parquet(path)
    for batch in parquet.iter_batches(batch_size=ROW_GROUP):
        yield from (cls.from_dict(row) for row in batch.to_pylist())


def readable_parquet(path: Path) -> pq.ParquetFile:
    """The Parquet file of records at `path`; RecordError when its schema_version is not one this code reads."""
    parquet = pq.ParquetFile(path)
    found = (parquet.schema_arrow.metadata or {}).get(b"schema_version", b"?").decode()
    if found not in map(str, READABLE_VERSIONS):
        raise RecordError(f"{path}: schema_version {found}; this code reads {READABLE_VERSIONS}")
    return parquet


@cache
def _schema(cls: type[Record]) -> pa.Schema:
    types_of = hints(cls)  # type: ignore[arg-type]  # a class is hashable; mypy checks a type[X] as an X (python/mypy#20409)
    fields = [
        pa.field(f.name, arrow_type(types_of[f.name]), nullable=optional_inner(types_of[f.name]) is not None)
        for f in init_fields(cls)
    ]
    return pa.schema(fields, metadata={"schema_version": str(SCHEMA_VERSION), "record": cls.kind})


class ArtifactError(InputError):
    """An artifact a gate needs is missing or unreadable: an environment failure of the rollout."""
