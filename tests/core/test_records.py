"""Records round-trip losslessly through Parquet and JSON and carry a schema version."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core.codec
from core.codec import RecordError, init_fields
from core.records import (
    SCHEMA_VERSION,
    Constraints,
    CriticInjection,
    Message,
    ModelUse,
    Origin,
    Record,
    Rollout,
    Step,
    Task,
    ToolCall,
    Trajectory,
    Usage,
    Verdict,
    read_parquet,
    write_parquet,
)
from core.run.usage import RoleUsage

ORIGIN = Origin({"critic/prompts/slide_review.j2": "0123456789ab"}, {"critic": ModelUse("gpt-4o", "openai", 0.7, 0.95, 8192)})

TASK = Task(
    task_id="persona-0001",
    source="persona",
    instruction="做一个关于数值分析的报告 😀",
    language="zh",
    attachments=("data/a.pdf",),
    constraints=Constraints(slides_min=8, slides_max=8, aspect_ratio="16:9", language="zh"),
    provenance={"source_id": "p1", "licence": "CC BY-NC-SA 4.0"},
    split="train",
    origin=ORIGIN,
)
TRAJECTORY = Trajectory(
    task_id="persona-0001",
    agent="presenter",
    model="glm",
    messages=(
        Message("system", "sys", kind="prompt"),
        Message(
            "assistant",
            "",
            reasoning="think",
            tool_calls=(ToolCall("c1", "inspect_slide", '{"html_file": "s.html"}'),),
            sent="0123456789abcdef0123",
        ),
        Message("tool", "2 defects", images=("renders/s.png",), tool_call_id="c1", name="inspect_slide", kind="tool"),
        Message("assistant", "", tool_calls=(ToolCall("k1", "thinking", '{"thought": "fix"}'),), kind="critic"),
    ),
    steps=(Step(0, 1.5, 0.25, 0.5, Usage(100, 20), ("inspect_slide",)), Step(1, 2.0, 0.1, 0.0, error="model_error")),
    injections=(CriticInjection(1, 3, "critic-vlm", '[{"category": "layout"}]', "inspect_slide:slides/s.html"),),
    status="finalized",
    profile="vllm-glm",
    outcome="slides",
)
ROLLOUT = Rollout(
    task_id="persona-0001",
    status="failed",
    failure="environment/timeout",
    artifacts={"pdf": "rollouts/x/deck.pdf"},
    steps={"researcher": 3},
    tool_counts={"write_file": 2},
    wall_s=12.5,
    usage={"agent": RoleUsage(calls=2, prompt_tokens=10, completion_tokens=1, cost_usd=0.25, failures={"server": 1})},
    origin=ORIGIN,
)
VERDICT = Verdict(
    task_id="persona-0001",
    gate="constraint",
    passed=False,
    category="constraint",
    score=0.5,
    reasons=("3 pages, expected 8",),
    usage={"judge": RoleUsage(calls=1, unpriced_calls=1)},
)
ALL = [TASK, TRAJECTORY, ROLLOUT, VERDICT]


@pytest.mark.parametrize("record", ALL, ids=lambda r: type(r).__name__)
def test_parquet_round_trip(record, tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_parquet([record, record], path, type(record))
    assert read_parquet(path, type(record)) == [record, record]
    assert pq.read_schema(path).metadata[b"schema_version"] == str(SCHEMA_VERSION).encode()


@pytest.mark.parametrize("record", ALL, ids=lambda r: type(r).__name__)
def test_json_round_trip(record) -> None:
    assert type(record).from_json(record.to_json()) == record


def test_json_takes_numpy_scalars_and_non_ascii_text_as_is() -> None:
    rollout = Rollout(
        task_id="t-数值", status="done", attempt=np.int64(2), wall_s=np.float32(2.5), steps={"presenter": np.int64(7)}
    )
    text = rollout.to_json()
    assert "t-数值" in text
    assert Rollout.from_json(text) == Rollout(task_id="t-数值", status="done", attempt=2, wall_s=2.5, steps={"presenter": 7})


def _dataclasses_within(tp: object) -> set[type]:
    """`tp` and every dataclass its fields' types name, at any depth (Optional, tuples, dicts)."""
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return {tp}.union(*(_dataclasses_within(hints[f.name]) for f in dataclasses.fields(tp)))
    return set().union(*map(_dataclasses_within, typing.get_args(tp)))


def test_json_and_arrow_encode_the_same_fields() -> None:
    """to_json lets orjson walk a record's dataclass fields; to_dict and the Arrow schema take the init
    fields only. They agree while no record, nor anything inside one, has a field left out of __init__."""
    records = [c for c in vars(core.records).values() if isinstance(c, type) and issubclass(c, Record) and c is not Record]
    inside = set().union(*map(_dataclasses_within, records))
    assert {Trajectory, Message, ToolCall, Usage, Constraints} <= inside
    for cls in inside:
        assert dataclasses.fields(cls) == tuple(init_fields(cls)), f"{cls.__name__} has a field outside __init__"


def test_schema_is_stable() -> None:
    names = [f.name for f in Task.arrow_schema()]
    assert names == [
        "task_id",
        "source",
        "instruction",
        "language",
        "attachments",
        "constraints",
        "provenance",
        "split",
        "origin",
        "checklist",
        "checklist_by",
        "schema_version",
    ]
    assert str(Trajectory.arrow_schema().field("steps").type).startswith("list<item: struct<index: int64")


def test_other_schema_version_is_refused(tmp_path: Path) -> None:
    data = json.loads(TASK.to_json()) | {"schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(RecordError, match="schema_version"):
        Task.from_dict(data)


ADDED_IN_2 = {"origin", "usage"}


@pytest.mark.parametrize("record", ALL, ids=lambda r: type(r).__name__)
def test_a_version_1_record_reads_with_the_new_fields_at_their_defaults(record, tmp_path: Path) -> None:
    """A run directory written before version 2 (no origin, no usage) stays readable, as JSON units and as Parquet."""
    cls = type(record)
    old = {k: v for k, v in json.loads(record.to_json()).items() if k not in ADDED_IN_2} | {"schema_version": 1}
    expected = dataclasses.replace(
        record, **{f.name: f.default_factory() for f in dataclasses.fields(cls) if f.name in ADDED_IN_2}
    )
    assert cls.from_json(json.dumps(old)) == expected
    schema = cls.arrow_schema()
    fields = [f for f in schema if f.name not in ADDED_IN_2]
    row = {k: v for k, v in core.codec.encode(record, arrow=True).items() if k not in ADDED_IN_2} | {"schema_version": 1}
    table = pa.Table.from_pylist([row], schema=pa.schema(fields, metadata={"schema_version": "1", "record": cls.kind}))
    pq.write_table(table, tmp_path / "v1.parquet")
    assert read_parquet(tmp_path / "v1.parquet", cls) == [expected]


def test_a_version_2_trajectory_reads_with_no_profile_and_no_digests() -> None:
    """Trajectories written before profiles: the export then follows export.profile (train/samples.py)."""
    old = json.loads(TRAJECTORY.to_json()) | {"schema_version": 2}
    del old["profile"], old["vision"]
    for message in old["messages"]:
        del message["sent"]
    read = Trajectory.from_json(json.dumps(old))
    assert read.profile is None and read.vision and all(m.sent is None for m in read.messages)
    plain = tuple(dataclasses.replace(m, sent=None) for m in TRAJECTORY.messages)
    assert read == dataclasses.replace(TRAJECTORY, messages=plain, profile=None, vision=True)


@pytest.mark.parametrize("arrow", [False, True], ids=["json", "parquet"])
def test_a_version_3_rollout_keeps_its_usage_and_a_scripted_agent_s_estimate(arrow: bool, tmp_path: Path) -> None:
    """Before 4 a rollout held its tokens by role and its cost beside its usage: they are dropped, and the tokens of a
    role its usage does not name (a scripted agent's estimate) become its estimated_tokens."""
    old = json.loads(ROLLOUT.to_json()) | {"schema_version": 3}
    del old["estimated_tokens"]
    old |= {
        "prompt_tokens": {"agent": 10, "presenter": 700},
        "completion_tokens": {"agent": 1, "presenter": 70},
        "cost_usd": 0.25,
    }
    expected = dataclasses.replace(ROLLOUT, estimated_tokens={"presenter": Usage(700, 70)})
    if not arrow:
        assert Rollout.from_json(json.dumps(old)) == expected
        return
    row = core.codec.encode(dataclasses.replace(ROLLOUT, estimated_tokens={}), arrow=True)
    del row["estimated_tokens"]
    row |= {"schema_version": 3, "cost_usd": 0.25}
    row |= {k: [{"key": r, "value": n} for r, n in old[k].items()] for k in ("prompt_tokens", "completion_tokens")}
    pq.write_table(pa.Table.from_pylist([row]).replace_schema_metadata({"schema_version": "3"}), tmp_path / "v3.parquet")
    assert read_parquet(tmp_path / "v3.parquet", Rollout) == [expected]
    assert expected.tokens == 10 + 1 + 700 + 70 and expected.cost_usd == 0.25


def test_unknown_and_mistyped_fields_are_refused() -> None:
    with pytest.raises(RecordError, match="unknown field"):
        Task.from_dict(json.loads(TASK.to_json()) | {"extra": 1})
    with pytest.raises(RecordError, match="expected bool"):
        Verdict.from_dict(json.loads(VERDICT.to_json()) | {"passed": "yes"})


def test_trajectory_usage_sums_steps() -> None:
    assert TRAJECTORY.usage == Usage(100, 20)
