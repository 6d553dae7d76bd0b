"""The export as MS-SWIFT itself reads it: the strict loader, the GLM-4.6V-Flash template, loss masks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.run.reader import RunReader
from fakes.trajectories import CRITIC_THOUGHT
from train.config import ExportConfig, Truncation
from train.export import ExportReport, export_run
from train.samples import SWIFT_TAGS
from train.tokens import TemplateCounter, image_root
from train.validate import validate_file

pytestmark = pytest.mark.swift


def trained_text(counter: TemplateCounter, row: dict) -> str:
    encoded = counter.encode(row)
    tokenizer = counter.template.tokenizer
    return tokenizer.decode([i for i, label in zip(encoded["input_ids"], encoded["labels"]) if label != -100])


def test_our_defused_tags_are_swifts_special_tokens() -> None:
    from swift.template.base import Template

    assert {t.strip("<>") for t in Template.special_tokens} <= set(SWIFT_TAGS)


def test_the_strict_loader_takes_every_row_and_the_template_expands_images(exported: ExportReport, tiny_model: Path) -> None:
    for name in ("train.jsonl", "val.jsonl"):
        report = validate_file(exported.out_dir / name, str(tiny_model))
        assert report.ok, report.summary()
        assert report.loaded == report.rows > 0
        with_images = [(n, c) for n, c in zip(report.images_per_row, report.counts) if n]
        assert with_images and all(c.image_tokens >= 16 * n for n, c in with_images)  # many tokens per image
        assert 0 < sum(c.trained for c in report.counts) < sum(c.total for c in report.counts)


def test_validation_without_processor_runs_the_loader_and_says_encode_was_skipped(exported: ExportReport) -> None:
    report = validate_file(exported.out_dir / "train.jsonl")
    assert report.ok and report.loaded == report.rows and not report.counts
    assert "encode step skipped" in report.summary()


def test_validation_catches_placeholder_mismatches_and_malformed_rows(exported: ExportReport) -> None:
    row = next(r for r in map(json.loads, (exported.out_dir / "train.jsonl").read_text().splitlines()) if r["images"])
    row["images"] = row["images"][:-1]
    bad = exported.out_dir / "bad.jsonl"
    bad.write_text(json.dumps(row) + "\n" + json.dumps({"messages": [{"role": "robot", "content": "x"}]}) + "\n")
    report = validate_file(bad)
    assert not report.ok
    assert any("placeholders for" in p for p in report.problems) and any("loader rejected" in p for p in report.problems)


@pytest.mark.parametrize("mask_critic", [False, True])
def test_critic_thoughts_are_trained_unless_masked(run_dir: Path, tiny_model: Path, tmp_path: Path, mask_critic: bool) -> None:
    report = export_run(RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "out"), mask_critic=mask_critic, val_fraction=0))
    counter = TemplateCounter(tiny_model)
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    first = [row for row in rows if (row["task_id"], row["agent"]) == (rows[0]["task_id"], rows[0]["agent"])]  # its parts
    with image_root(report.out_dir):
        text = "".join(trained_text(counter, row) for row in first)
    assert "<tool_call>write_file" in text and "</think>" in text  # the agent's own calls and reasoning
    assert ("<tool_call>thinking" in text) is not mask_critic
    assert (CRITIC_THOUGHT in text) is not mask_critic


def test_template_counts_decide_truncation(run_dir: Path, tiny_model: Path, tmp_path: Path) -> None:
    cfg = ExportConfig(out_dir=str(tmp_path / "out"), model_dir=str(tiny_model), max_length=3000, truncation=Truncation.truncate)
    report = export_run(RunReader(run_dir), cfg)
    assert report.token_method.startswith("template deckforge_glm4_5v")
    assert any(e.truncated for e in report.samples) and all(e.tokens.total <= 3000 for e in report.samples)
    assert validate_file(tmp_path / "out" / "train.jsonl", str(tiny_model)).ok
