"""Which tokens carry loss, read from MS-SWIFT's own encoding of the export (train/labels.py, train.validate)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.run.reader import RunReader
from train.config import ExportConfig
from train.export import ExportReport, export_run
from train.labels import check_labels
from train.tokens import TemplateCounter, image_root
from train.validate import load_with_swift, validate_file

pytestmark = pytest.mark.swift
OBSERVATION = "<|observation|>"


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def with_tool_results(path: Path) -> dict[str, Any]:
    """A row where a tool call is answered by a tool result (what the observation token separates)."""
    for row in rows_of(path):
        roles = [m["role"] for m in row["messages"]]
        if any(a == "tool_call" and b == "tool_response" for a, b in zip(roles, roles[1:])):
            return row
    raise AssertionError(f"no row of {path} has a tool result")


def write_row(out_dir: Path, row: dict[str, Any]) -> Path:
    path = out_dir / "bad.jsonl"  # beside the export, so that its relative image paths resolve
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def inline_tool_calls(row: dict[str, Any]) -> dict[str, Any]:
    """A wrong export: each call written as GLM text in the assistant's message, and the observation token put at the
    start of the tool result that follows (where MS-SWIFT masks it), instead of `tool_call` messages."""
    messages: list[dict[str, Any]] = []
    for message in row["messages"]:
        if message["role"] == "tool_call":
            call = json.loads(message["content"])
            args = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in call["arguments"].items())
            text = f"<tool_call>{call['name']}\n{args}</tool_call>"
            if messages[-1]["role"] == "assistant":
                messages[-1] = {**messages[-1], "content": f"{messages[-1]['content'].strip()}\n{text}".lstrip("\n")}
            else:
                messages.append({**message, "role": "assistant", "content": text})
        elif message["role"] == "tool_response" and messages[-1]["role"] == "assistant":
            messages.append({**message, "content": f"{OBSERVATION}\n{message['content']}"})
        else:
            messages.append(message)
    return {**row, "messages": messages}


def test_every_row_of_a_real_export_passes_the_label_checks(exported: ExportReport, tiny_model: Path) -> None:
    counter = TemplateCounter(tiny_model)
    tokenizer = counter.template.tokenizer
    observation = tokenizer.convert_tokens_to_ids(OBSERVATION)
    calling_turns = trained_observations = checked = 0
    for name in ("train.jsonl", "val.jsonl"):
        path = exported.out_dir / name
        with image_root(path.parent):
            for row in load_with_swift(path):
                encoded = counter.encode(row)
                assert check_labels(encoded, row, tokenizer) == [], row["messages"][:3]
                messages = row["messages"]
                ends = [m for m, nxt in zip(messages, messages[1:] + [{"role": None}]) if m["role"] == "tool_call" != nxt["role"]]
                calling_turns += sum(1 for m in ends if m.get("loss") is not False)  # the trained ones
                trained_observations += sum(
                    1 for i, label in zip(encoded["input_ids"], encoded["labels"]) if i == observation and label != -100
                )
                checked += 1
        report = validate_file(path, str(tiny_model))
        assert report.ok, report.summary()
        assert "labels checked against the messages" in report.summary()
    assert checked >= 4 and calling_turns >= checked  # tool-calling turns in every row, each ending on a trained token
    assert trained_observations == calling_turns


def test_masked_critic_turns_carry_no_loss_and_pass(run_dir: Path, tiny_model: Path, tmp_path: Path) -> None:
    export_run(RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "out"), mask_critic=True, val_fraction=0))
    path = tmp_path / "out" / "train.jsonl"
    assert any(m.get("loss") is False for row in rows_of(path) for m in row["messages"])
    report = validate_file(path, str(tiny_model))
    assert report.ok, report.summary()


def test_an_untrained_observation_is_refused(exported: ExportReport, tiny_model: Path) -> None:
    row = inline_tool_calls(with_tool_results(exported.out_dir / "train.jsonl"))
    assert not any(m["role"] == "tool_call" for m in row["messages"])
    report = validate_file(write_row(exported.out_dir, row), str(tiny_model))
    assert report.loaded == 1 and not report.ok
    untrained = [
        p for p in report.problems if re.fullmatch(r"row 1: message \d+ \(assistant\): the <\|observation\|> .*no loss", p)
    ]
    assert untrained, report.summary()
    assert any("a call written as text?" in p for p in report.problems)
    index = int(re.search(r"message (\d+)", untrained[0]).group(1))
    assert row["messages"][index + 1]["content"].startswith(OBSERVATION)  # named: the turn the observation should end


def test_a_tool_result_with_loss_is_refused(exported: ExportReport, tiny_model: Path) -> None:
    row = with_tool_results(exported.out_dir / "train.jsonl")
    index = next(i for i, m in enumerate(row["messages"]) if m["role"] == "tool_response")
    row["messages"][index]["loss"] = True
    report = validate_file(write_row(exported.out_dir, row), str(tiny_model))
    assert not report.ok
    assert any(p.startswith(f'row 1: message {index} (tool_response): "loss": true') for p in report.problems), report.summary()


def test_trained_tokens_inside_a_tool_result_are_found(exported: ExportReport, tiny_model: Path) -> None:
    """The token-level check, on labels that train a tool result (as a template or trainer that honoured the flag would)."""
    counter = TemplateCounter(tiny_model)
    tokenizer = counter.template.tokenizer
    path = write_row(exported.out_dir, with_tool_results(exported.out_dir / "train.jsonl"))
    with image_root(path.parent):
        (row,) = load_with_swift(path)
        encoded = counter.encode(row)
    assert check_labels(encoded, row, tokenizer) == []
    ids, labels = encoded["input_ids"], list(encoded["labels"])
    start = ids.index(tokenizer.convert_tokens_to_ids(OBSERVATION)) + 1
    end = ids.index(tokenizer.convert_tokens_to_ids("</tool_response>"), start) + 1
    labels[start:end] = ids[start:end]
    problems = check_labels({**encoded, "labels": labels}, row, tokenizer)
    first = next(i for i, m in enumerate(row["messages"]) if m["role"] == "tool_response")
    assert any(re.match(rf"messages? {first}\b.*tool_response.*: {end - start} trained tokens", p) for p in problems), problems


def test_an_image_tag_without_an_image_is_refused(exported: ExportReport, tiny_model: Path) -> None:
    row = next(r for r in rows_of(exported.out_dir / "train.jsonl") if not r["images"])
    index = next(i for i, m in enumerate(row["messages"]) if m["role"] == "user")
    row["messages"][index]["content"] += "\n<image>"
    report = validate_file(write_row(exported.out_dir, row), str(tiny_model))
    assert not report.ok
    assert f"row 1: message {index} (user): 1 <image> placeholders for 0 images" in report.problems, report.summary()
