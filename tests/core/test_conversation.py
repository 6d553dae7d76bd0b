"""Records -> the conversation a profile's server is sent: tool images, past reasoning, unparsable arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from core.llm.conversation import IMAGE_NOTE, PROFILES, PastReasoning, Profile, ToolImages, profile_named
from core.llm.wire import to_wire
from core.records import Message, ToolCall


def _records() -> list[Message]:
    look = ToolCall("c1", "inspect_slide", '{"path": "s1.html"}')
    return [
        Message("system", "sys", kind="prompt"),
        Message("user", "make a deck", kind="prompt"),
        Message("assistant", "", reasoning="look first", tool_calls=(look, ToolCall("c2", "read_file", "{oops"))),
        Message("tool", "1 defect", ("slide.png",), tool_call_id="c1", kind="tool"),
        Message("tool", "Error: not JSON", tool_call_id="c2", kind="tool"),
        Message("assistant", "", reasoning="fix it", tool_calls=(ToolCall("c3", "write_file", '{"path": "s1.html"}'),)),
        Message("tool", "written", tool_call_id="c3", kind="tool"),
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Image.new("RGB", (8, 8), "red").save(tmp_path / "slide.png")
    return tmp_path


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_profile_moves_tool_images_to_a_user_message(root: Path, name: str) -> None:
    wire = to_wire(_records(), root, profile_named(name))
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "user", "assistant", "tool"]
    assert wire[3]["content"] == "1 defect"
    note, image = wire[5]["content"]
    assert note == {"type": "text", "text": IMAGE_NOTE} and image["image_url"]["url"].startswith("data:image/png;base64,")


def test_a_profile_may_keep_images_in_the_tool_message(root: Path) -> None:
    wire = to_wire(_records(), root, Profile("permissive", ToolImages.tool, PastReasoning.none, "a test's"))
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert wire[3]["content"][1]["type"] == "image_url"


def test_glm_profiles_send_back_the_reasoning_after_the_last_user_message(root: Path) -> None:
    wire = to_wire(_records(), root, profile_named("vllm-glm"))
    assert [m.get("reasoning_content") for m in wire if m["role"] == "assistant"] == [
        None,
        "fix it",
    ]  # the first precedes the images
    no_images = [m for m in _records() if not m.images]
    wire = to_wire(no_images, root, profile_named("vllm-glm"))
    assert [m.get("reasoning_content") for m in wire if m["role"] == "assistant"] == ["look first", "fix it"]


@pytest.mark.parametrize("name", ["openai", "llama.cpp"])
def test_other_profiles_send_no_reasoning(root: Path, name: str) -> None:
    assert all("reasoning_content" not in m for m in to_wire(_records(), root, profile_named(name)))


def test_arguments_that_do_not_parse_are_sent_as_an_empty_object(root: Path) -> None:
    records = _records()
    wire = to_wire(records, root, profile_named("vllm-glm"))
    assert [c["function"]["arguments"] for c in wire[2]["tool_calls"]] == ['{"path": "s1.html"}', "{}"]
    assert records[2].tool_calls[1].arguments == "{oops"  # the record keeps what the model wrote


def test_a_text_only_model_reads_a_note_where_the_images_were(root: Path) -> None:
    wire = to_wire(_records(), root, profile_named("llama.cpp"), vision=False)
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert wire[3]["content"] == "1 defect\n[1 image(s) not shown: this model reads no images]"


def test_an_unknown_profile_is_named() -> None:
    with pytest.raises(ValueError, match="unknown profile 'vllm'; known: openai, vllm-glm, sglang, llama.cpp"):
        profile_named("vllm")
