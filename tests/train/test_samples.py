"""Trajectory -> MS-SWIFT samples: reasoning, tool calls, images, critic injections, defused tags, parts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from core.llm.conversation import IMAGE_NOTE
from core.records import Message, ToolCall, Trajectory
from core.run.blobs import BlobStore
from train.samples import IMAGE_TAG, Sample, SampleError, defuse_tags, to_samples


def _trajectory(*messages: Message, profile: str = "vllm-glm") -> Trajectory:
    head = (Message("system", "sys", kind="prompt"), Message("user", "make a deck", kind="prompt"))
    return Trajectory(
        task_id="t", agent="presenter", model="m", messages=head + messages, tools_json="[]", status="finalized", profile=profile
    )


def to_sample(trajectory: Trajectory, workspace: Path, mask_critic: bool = False) -> Sample:
    """The one sample of a trajectory that is not split."""
    (sample,) = to_samples(trajectory, workspace, mask_critic)
    return sample


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
            Message("assistant", "Let me look.", tool_calls=calls),
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
        "user",
        "tool_call",
        "tool_response",
        "tool_call",
    ]
    assert rows[2]["content"] == "Let me look."
    assert json.loads(rows[4]["content"]) == {"name": "read_file", "arguments": {"path": "x", "n": 2}}
    # vLLM takes no image in a tool message: as in the request, they follow the tool results in a user message
    assert rows[5]["content"] == "rendered" and rows[7]["content"] == f"{IMAGE_NOTE}{IMAGE_TAG}{IMAGE_TAG}"
    assert sample.images == (workspace / "a.png", workspace / "b.png")
    assert json.loads(rows[8]["content"])["name"] == "thinking" and "loss" not in rows[8]
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


@pytest.mark.parametrize("arguments", ["{oops", "[1, 2]"])
def test_a_call_that_is_not_a_json_object_is_context_only(workspace: Path, arguments: str) -> None:
    sample = to_sample(
        _trajectory(
            Message("assistant", tool_calls=(ToolCall("1", "f", arguments),)),
            Message("tool", "Error: not valid JSON", tool_call_id="1", kind="tool"),
            Message("assistant", tool_calls=(ToolCall("2", "f", '{"a": 1}'),)),
        ),
        workspace,
    )
    rows = sample.to_swift()["messages"]
    assert rows[2] == {"role": "tool_call", "content": '{"name": "f", "arguments": {}}', "loss": False}  # as the history sent it
    assert rows[4] == {"role": "tool_call", "content": '{"name": "f", "arguments": {"a": 1}}'}


def _reasoned_turns(profile: str) -> Trajectory:
    """Two reasoned turns, an inspection's image between them (a user message in the request), then a third."""
    call = ToolCall("1", "inspect_slide", '{"path": "s1.html"}')
    return _trajectory(
        Message("assistant", "", reasoning="first", tool_calls=(call,)),
        Message("tool", "rendered", ("a.png",), tool_call_id="1", kind="tool"),
        Message("assistant", "", reasoning="second", tool_calls=(ToolCall("2", "read_file", '{"path": "x"}'),)),
        Message("tool", "text", tool_call_id="2", kind="tool"),
        Message("assistant", "done", reasoning="third"),
        profile=profile,
    )


def test_reasoning_the_template_hides_later_splits_the_trajectory(workspace: Path) -> None:
    """GLM renders past reasoning only after the last user message: turn 2 is written where turn 1's is hidden."""
    first, second = to_samples(_reasoned_turns("vllm-glm"), workspace)
    assert [m.content for m in first.messages if m.role == "assistant"] == ["<think>first</think>\n"]
    rows = second.to_swift()["messages"]
    assert (second.part, first.part) == (1, 0)
    assert [(m["role"], m.get("loss")) for m in rows if m["role"] in ("assistant", "tool_call")] == [
        ("tool_call", False),  # turn 1 as the model then read it: no reasoning, no loss
        ("assistant", None),
        ("tool_call", None),
        ("assistant", None),
    ]
    # turns 2 and 3 follow no user message: turn 3 was written reading turn 2's reasoning, and so is it trained
    assert [m["content"] for m in rows if m["role"] == "assistant"] == ["<think>second</think>\n", "<think>third</think>\ndone"]
    assert len(second.images) == 1


def test_a_profile_that_sends_no_reasoning_back_gives_a_part_per_reasoned_turn(workspace: Path) -> None:
    samples = to_samples(_reasoned_turns("openai"), workspace)
    assert [s.part for s in samples] == [0, 1, 2]
    trained = [[m.content for m in s.messages if m.role == "assistant" and m.loss is not False] for s in samples]
    assert trained == [["<think>first</think>\n"], ["<think>second</think>\n"], ["<think>third</think>\ndone"]]
    assert "think" not in "".join(m.content for m in samples[2].messages if m.loss is False)


def test_turns_without_reasoning_stay_one_sample(workspace: Path) -> None:
    trajectory = _reasoned_turns("openai")
    plain = replace(trajectory, messages=tuple(replace(m, reasoning=None) for m in trajectory.messages))
    assert len(to_samples(plain, workspace)) == 1


def test_missing_or_escaping_images_are_reported(workspace: Path) -> None:
    with pytest.raises(SampleError, match="missing"):
        to_sample(_trajectory(Message("user", "look", ("gone.png",)), Message("assistant", "ok")), workspace)
    with pytest.raises(SampleError, match="outside the workspace"):
        to_sample(_trajectory(Message("user", "look", ("../a.png",)), Message("assistant", "ok")), workspace)


def test_an_image_in_the_run_s_blob_store_is_the_only_one_outside_the_workspace(workspace: Path) -> None:
    run = workspace.parent / "run"
    render = run / "rollouts" / "t1" / "renders" / "s.webp"
    render.parent.mkdir(parents=True)
    Image.new("RGB", (8, 8), "white").save(render, "WEBP", lossless=True)
    store = BlobStore(run)
    ref = store.ref(store.put(render), render.parent.parent)
    sample = to_sample(_trajectory(Message("user", "look", (ref,)), Message("assistant", "ok")), render.parent.parent)
    assert sample.images == (store.put(render),)
    escaping = ref.replace("blobs", "blobz")
    with pytest.raises(SampleError, match="outside the workspace and is not one of the run's blobs"):
        to_sample(_trajectory(Message("user", "look", (escaping,)), Message("assistant", "ok")), render.parent.parent)


def test_a_trajectory_without_an_answer_is_not_a_sample(workspace: Path) -> None:
    with pytest.raises(SampleError, match="no assistant turn"):
        to_sample(_trajectory(), workspace)


def test_keeping_the_reasoning_gives_one_sample_with_every_past_turn_s(workspace: Path) -> None:
    (sample,) = to_samples(_reasoned_turns("vllm-glm"), workspace, keep_reasoning=True)
    shown = [m.content for m in sample.messages if m.role == "assistant"]
    assert shown == ["<think>first</think>\n", "<think>second</think>\n", "<think>third</think>\ndone"]
    assert all(m.loss is not False for m in sample.messages if m.role in ("assistant", "tool_call"))
