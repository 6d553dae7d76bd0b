"""train.parity: a sample's trained turns against the requests its teacher was sent, token by token."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from core.llm.conversation import PROFILES, PastReasoning, Profile, ToolImages, profile_named
from core.llm.wire import digest, to_wire
from core.records import Message, ToolCall, Trajectory
from train.config import ExportConfig, HistoryReasoning
from train.parity import Parity, ParityReport, main
from train.samples import to_samples

pytestmark = pytest.mark.swift


@pytest.fixture(scope="module")
def parity(tiny_model: Path) -> Parity:
    return Parity(ExportConfig(model_dir=str(tiny_model)))


def _trajectory(workspace: Path, tool_text: str = "rendered") -> Trajectory:
    """Reasoned turns around an inspection whose image the request carries in a user message; digests as sent."""
    Image.new("RGB", (64, 36), "navy").save(workspace / "render.png")
    look = ToolCall("1", "inspect_slide", '{"html_file": "s1.html"}')
    messages = [
        Message("system", "sys", kind="prompt"),
        Message("user", "make a deck", kind="prompt"),
        Message("assistant", "", reasoning="write first", tool_calls=(ToolCall("0", "write_file", '{"path": "s1.html"}'),)),
        Message("tool", "written", tool_call_id="0", kind="tool"),
        Message("assistant", "", reasoning="now look", tool_calls=(look,)),
        Message("tool", tool_text, ("render.png",), tool_call_id="1", kind="tool"),
        Message("assistant", "", reasoning="fine", tool_calls=(ToolCall("2", "finalize", '{"outcome": "slides"}'),)),
        Message("tool", "Finalized.", tool_call_id="2", kind="tool"),
    ]
    glm = profile_named("vllm-glm")
    sent = [
        replace(m, sent=digest(to_wire(messages[:i], workspace, glm))) if m.role == "assistant" else m
        for i, m in enumerate(messages)
    ]
    return Trajectory("t", "presenter", "m", messages=tuple(sent), tools_json="[]", status="finalized", profile="vllm-glm")


def _check(parity: Parity, trajectory: Trajectory, workspace: Path, made_as: Trajectory | None = None) -> ParityReport:
    parity.report = ParityReport()
    for sample in to_samples(made_as or trajectory, workspace):
        parity.difference(sample, trajectory, workspace)
    return parity.report


def test_samples_equal_the_requests_sent(parity: Parity, tmp_path: Path) -> None:
    report = _check(parity, _trajectory(tmp_path), tmp_path)
    assert (report.turns_checked, report.turns_equal, report.requests_verified) == (3, 3, 3)
    assert report.samples == 2  # the inspection's user message hides the earlier reasoning: a second part


def test_images_inside_the_tool_response_are_a_difference(parity: Parity, tmp_path: Path, monkeypatch) -> None:
    """The export this project made before profiles: the render inside its tool_response, not after it."""
    monkeypatch.setitem(PROFILES, "in-tool", Profile("in-tool", ToolImages.tool, PastReasoning.after_last_user, "a test's"))
    trajectory = _trajectory(tmp_path)
    report = _check(parity, trajectory, tmp_path, made_as=replace(trajectory, profile="in-tool"))
    assert report.turns_different == 1 and report.differences[0]["message"] == 6  # the turn after the inspection


def test_reasoning_the_teacher_was_shown_but_the_sample_drops_is_a_difference(parity: Parity, tmp_path: Path) -> None:
    trajectory = _trajectory(tmp_path)
    no_images = replace(trajectory, messages=tuple(replace(m, images=(), sent=None) for m in trajectory.messages))
    report = _check(parity, no_images, tmp_path, made_as=replace(no_images, profile="openai"))
    assert report.turns_different == 2  # turns 2 and 3 were written reading the reasoning before them


def test_a_request_that_is_not_the_one_sent_is_a_difference(parity: Parity, tmp_path: Path) -> None:
    trajectory = _trajectory(tmp_path)
    (tmp_path / "render.png").unlink()
    Image.new("RGB", (64, 36), "red").save(tmp_path / "render.png")  # the file changed since it was sent
    report = _check(parity, trajectory, tmp_path)
    assert report.turns_different == 1 and "digest" in report.differences[0]["difference"]


def test_defused_media_tags_are_a_named_difference(parity: Parity, tmp_path: Path) -> None:
    report = _check(parity, _trajectory(tmp_path, tool_text="an <video> tag in the slide"), tmp_path)
    assert report.turns_named_difference == {"defused_tags": 1} and report.turns_different == 0


def test_the_cli_refuses_what_is_not_a_run(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path)]) == 2 and "is not a run directory" in capsys.readouterr().err
    (tmp_path / "tasks").mkdir()
    assert main([str(tmp_path)]) == 2 and "not a run directory with rollouts" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--profile", "gpt"])
    assert "invalid choice: 'gpt'" in capsys.readouterr().err


def test_a_kept_reasoning_sample_differs_by_its_named_difference_only(tiny_model: Path, tmp_path: Path) -> None:
    parity = Parity(ExportConfig(model_dir=str(tiny_model), history_reasoning=HistoryReasoning.keep))
    trajectory = _trajectory(tmp_path)
    (sample,) = to_samples(trajectory, tmp_path, keep_reasoning=True)
    assert parity.difference(sample, trajectory, tmp_path) is None
    report = parity.report
    assert (report.turns_checked, report.turns_equal, report.turns_named_difference) == (3, 2, {"history_reasoning": 1})
