"""Trajectory -> MS-SWIFT sample: reasoning, tool calls, images, critic injections, defused tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from core.records import Message, ToolCall, Trajectory
from train.samples import IMAGE_TAG, SampleError, defuse_tags, to_sample


def _trajectory(*messages: Message) -> Trajectory:
    head = (Message("system", "sys", kind="prompt"), Message("user", "make a deck", kind="prompt"))
    return Trajectory(task_id="t", agent="presenter", model="m", messages=head + messages, tools_json="[]", status="finalized")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    for name in ("a.png", "b.png"):
        Image.new("RGB", (64, 48)).save(tmp_path / name)
    return tmp_path


def test_turns_become_swift_messages(workspace: Path) -> None:
    calls = (ToolCall("1", "inspect_slide", '{"path": "s1.html"}'), ToolCall("2", "read_file", '{"path": "x", "n": 2}'))
    critic = ToolCall("c", "thinking", '{"thought": "fix contrast"}')
    done = ToolCall("3", "finalize", '{"outcome": "slides"}')
    sample = to_sample(
        _trajectory(
            Message("assistant", " Let me look. ", reasoning=" plan ", tool_calls=calls),
            Message("tool", "rendered", ("a.png", "b.png"), tool_call_id="1", kind="tool"),
            Message("tool", "text", tool_call_id="2", kind="tool"),
            Message("assistant", tool_calls=(critic,), kind="critic"),
            Message("tool", "fix contrast", tool_call_id="c", kind="critic"),
            Message("assistant", "", tool_calls=(done,)),
            Message("tool", "Finalized.", tool_call_id="3", kind="tool"),
        ),
        workspace,
    )
    rows = sample.to_swift()["messages"]
    assert [m["role"] for m in rows] == [
        "system",
        "user",
        "assistant",
        "tool_call",
        "tool_call",
        "tool_response",
        "tool_response",
        "tool_call",
        "tool_response",
        "tool_call",
    ]
    assert rows[2]["content"] == "<think>plan</think>\nLet me look."
    assert json.loads(rows[4]["content"]) == {"name": "read_file", "arguments": {"path": "x", "n": 2}}
    assert rows[5]["content"] == f"rendered\n{IMAGE_TAG}\n{IMAGE_TAG}"
    assert sample.images == (workspace / "a.png", workspace / "b.png")
    assert json.loads(rows[7]["content"])["name"] == "thinking" and "loss" not in rows[7]
    assert sample.critic_calls == 1
    assert rows[-1]["content"].startswith('{"name": "finalize"')  # the last observation is left out


def test_critic_injections_can_be_masked(workspace: Path) -> None:
    critic = ToolCall("c", "thinking", '{"thought": "fix"}')
    trajectory = _trajectory(
        Message("assistant", tool_calls=(critic,), kind="critic"),
        Message("tool", "fix", kind="critic"),
        Message("assistant", "done"),
    )
    masked = to_sample(trajectory, workspace, mask_critic=True).to_swift()["messages"]
    assert [m.get("loss") for m in masked] == [None, None, False, None, None]


def test_literal_media_tags_are_defused(workspace: Path) -> None:
    sample = to_sample(_trajectory(Message("assistant", "<video> and <image> and <image href='x'/>")), workspace)
    content = sample.to_swift()["messages"][-1]["content"]
    assert IMAGE_TAG not in content and "<video>" not in content and "<image href='x'/>" in content
    assert defuse_tags("</image><img>") == "</image ><img >"


@pytest.mark.parametrize(("arguments", "message"), [("{oops", "malformed JSON"), ("[1, 2]", "not a JSON object")])
def test_unusable_tool_arguments_are_reported(workspace: Path, arguments: str, message: str) -> None:
    with pytest.raises(SampleError, match=message):
        to_sample(_trajectory(Message("assistant", tool_calls=(ToolCall("1", "f", arguments),))), workspace)


def test_missing_or_escaping_images_are_reported(workspace: Path) -> None:
    with pytest.raises(SampleError, match="missing"):
        to_sample(_trajectory(Message("user", "look", ("gone.png",)), Message("assistant", "ok")), workspace)
    with pytest.raises(SampleError, match="outside the workspace"):
        to_sample(_trajectory(Message("user", "look", ("../a.png",)), Message("assistant", "ok")), workspace)


def test_a_trajectory_without_an_answer_is_not_a_sample(workspace: Path) -> None:
    with pytest.raises(SampleError, match="no assistant turn"):
        to_sample(_trajectory(), workspace)
