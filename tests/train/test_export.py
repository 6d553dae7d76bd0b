"""Export of synthetic run directories: acceptance, splits, images, lengths, the card, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from core.config import PROJECT_ROOT
from core.llm.conversation import IMAGE_NOTE
from core.records import Verdict
from core.run.reader import RunReader
from core.run.store import RunStore
from core.run.usage import RoleUsage
from fakes.runs import build_run, training_run
from train.config import ExportConfig, Truncation
from train.export import ExportReport, export_run
from train.hub import hub_dataset
from train.rows import val_tasks
from train.samples import IMAGE_TAG

ROLLOUT_COST = training_run().rollout_cost_usd  # what each finished rollout's calls cost (conftest's run too)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def trajectories(report: ExportReport) -> set[tuple[str, str]]:
    return {(e.sample.task_id, e.sample.agent) for e in report.samples}


def test_only_accepted_train_tasks_are_exported(exported: ExportReport) -> None:
    # task-0003 fails the quality gate, task-0004's rollout failed, task-0005 is an eval task
    assert {e.sample.task_id for e in exported.samples} == {"task-0000", "task-0001", "task-0002"}
    assert (exported.rollouts, exported.accepted, exported.rejected) == (6, 4, {"quality": 1, "environment": 1})
    assert [(s.task_id, s.kind) for s in exported.skipped] == [("task-0005", "eval_task")]
    assert len(rows(exported.out_dir / "train.jsonl")) + len(rows(exported.out_dir / "val.jsonl")) == len(exported.samples)
    assert len(trajectories(exported)) == 6  # both agents of the three tasks; a trajectory may give several parts


def test_tasks_never_straddle_the_split(exported: ExportReport) -> None:
    train = {e.sample.task_id for e in exported.train}
    val = {e.sample.task_id for e in exported.val}
    assert len(val) == 1 and not train & val
    assert trajectories(exported) == {(t, agent) for t in train | val for agent in ("researcher", "presenter")}
    assert val_tasks(["a", "b", "c"], 0.0, 0) == set() and len(val_tasks(["a", "b"], 0.9, 0)) == 1


def test_images_are_linked_in_order_with_relative_paths(exported: ExportReport) -> None:
    for row in rows(exported.out_dir / "train.jsonl") + rows(exported.out_dir / "val.jsonl"):
        tags = sum(m["content"].count(IMAGE_TAG) for m in row["messages"])
        assert tags == len(row["images"])
        for image in row["images"]:
            assert not Path(image).is_absolute() and (exported.out_dir / image).is_file()
        tool_images = [m for m in row["messages"] if IMAGE_TAG in m["content"]]
        assert all(m["role"] == "user" and m["content"].startswith(IMAGE_NOTE) for m in tool_images)  # after the tool results
        assert row["images"] == sorted(row["images"])  # slide_01, slide_02, ... in the order they were rendered


def test_the_card_reports_counts_sources_and_config(exported: ExportReport) -> None:
    card = (exported.out_dir / "README.md").read_text(encoding="utf-8")
    assert "accepted: 4 (every configured gate passed: constraint, consistency, quality)" in card
    assert "CC-BY-4.0" in card and "CC-BY-NC-SA-4.0" in card
    assert "model: test-model" in card and RunReader(exported.out_dir.parent).config_hash() in card
    assert "Counted by: estimate" in card and "| 1,025-2,048 |" in card
    assert "18 `thinking` calls" in card and "trained on" in card
    epochs_tokens = sum(e.tokens.total for e in exported.train) * 5
    hours = epochs_tokens / 830 / 3600
    assert (
        f"trains {epochs_tokens:,} tokens:\nabout {hours:,.1f} GPU-hours ({hours / 8:,.1f} h on 8 GPUs) at 830 tokens/s" in card
    )


def test_the_card_states_the_run_s_cost_and_which_templates_and_models_made_the_samples(
    exported: ExportReport, run_dir: Path
) -> None:
    card = (exported.out_dir / "README.md").read_text(encoding="utf-8")
    finished = sum(r.status == "done" for r in RunReader(run_dir).rollouts())
    assert (
        f"**${finished * ROLLOUT_COST:,.4f}**" in card
        and f"${finished * ROLLOUT_COST / exported.accepted:,.4f} per accepted rollout" in card
    )
    samples, presenters = len(exported.samples), sum(e.sample.agent == "presenter" for e in exported.samples)
    assert f"| `agents/roles/prompts/presenter.en.j2` | `bbbbbbbbbbbb` | {presenters} | {presenters / samples:.1%} |" in card
    assert f"| agent: test-model [openai; t=0.7, top_p=0.95, max_tokens=8192] | {samples} | 100.0% |" in card
    RunStore(run_dir).spent_unfinished(
        "verdicts", "task-0000__quality", {"quality_judge": RoleUsage(calls=1, unpriced_calls=1)}, "no result"
    )
    unknown = export_run(RunReader(run_dir), ExportConfig(val_fraction=0.34, out_dir=str(run_dir / "again")))
    card = (unknown.out_dir / "README.md").read_text(encoding="utf-8")
    assert (
        "**unknown**" in card and "(1 calls of a model whose price is unknown)" in card and "unknown per accepted rollout" in card
    )


def test_without_verdicts_nothing_is_exported_unless_undecided_rollouts_are_asked_for(tmp_path: Path) -> None:
    run = build_run(tmp_path / "run", training_run(verdicts=False))
    report = export_run(RunReader(run), ExportConfig(out_dir=str(tmp_path / "out"), val_fraction=0))
    assert report.accepted == 0 and not report.samples and report.rejected == {"undecided": 4, "environment": 1}
    assert "have not run" in (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    report = export_run(RunReader(run), ExportConfig(out_dir=str(tmp_path / "all"), val_fraction=0, include_undecided=True))
    assert report.accepted == 4 and len(trajectories(report)) == 8 and not report.val
    assert "--include-undecided" in (tmp_path / "all" / "README.md").read_text(encoding="utf-8")
    assert (tmp_path / "all" / "val.jsonl").read_text() == ""


def test_a_rollout_with_a_missing_judge_verdict_is_not_exported(run_dir: Path, tmp_path: Path) -> None:
    (run_dir / "units" / "verdicts" / "task-0000__quality.json").unlink()  # the judge's verdict, never published
    RunStore(run_dir).compact("verdicts", Verdict)
    report = export_run(RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "out")))
    assert report.rejected == {"quality": 1, "environment": 1, "undecided": 1}
    assert "task-0000" not in {e.sample.task_id for e in report.samples} and report.accepted == 3
    report = export_run(RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "opt-in"), include_undecided=True))
    assert "task-0000" in {e.sample.task_id for e in report.samples}


def test_with_no_gates_configured_every_finished_rollout_is_exported(run_dir: Path, tmp_path: Path) -> None:
    config = run_dir / "config.yaml"
    config.write_text(yaml.safe_dump(yaml.safe_load(config.read_text()) | {"filters": {"gates": []}}))
    report = export_run(
        RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "out"))
    )  # verdicts.parquet is there, as after filters=none
    assert (report.accepted, report.rejected) == (5, {"environment": 1})  # the quality rejection is not a configured gate's
    assert {e.sample.task_id for e in report.samples} == {"task-0000", "task-0001", "task-0002", "task-0003"}
    assert "no gates configured" in report.acceptance


def test_long_samples_are_dropped_or_cut_at_a_turn(run_dir: Path, tmp_path: Path) -> None:
    dropped = export_run(RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "a"), max_length=1000))
    assert {s.kind for s in dropped.skipped} == {"too_long", "eval_task"} and all(e.tokens.total <= 1000 for e in dropped.samples)
    assert not any(e.truncated for e in dropped.samples)
    cut = export_run(
        RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "b"), max_length=1000, truncation=Truncation.truncate)
    )
    assert (
        len(trajectories(cut)) == 6 and all(e.tokens.total <= 1000 for e in cut.samples) and any(e.truncated for e in cut.samples)
    )
    for row in rows(tmp_path / "b" / "train.jsonl"):
        assert row["messages"][-1]["role"] in ("assistant", "tool_call")
        assert sum(m["content"].count(IMAGE_TAG) for m in row["messages"]) == len(row["images"])


def test_cli_exports_and_reports(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    done = subprocess.run(
        [sys.executable, "-m", "train.export", str(run_dir), "--out", str(out), "--mask-critic"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "accepted 4 of 6 rollouts" in done.stdout and "skipped task-0005" in done.stdout
    critic = [m for r in rows(out / "train.jsonl") for m in r["messages"] if m["content"].startswith('{"name": "thinking"')]
    assert critic and all(m["loss"] is False for m in critic)  # the critic's calls, masked
    bad = subprocess.run([sys.executable, "-m", "train.export"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "RUN_DIR" in bad.stderr


def test_the_hub_dataset_embeds_images_and_keeps_both_splits(exported: ExportReport) -> None:
    dataset = hub_dataset(exported.out_dir)  # what push_to_hub uploads (the upload itself needs a network)
    assert (dataset["train"].num_rows, dataset["validation"].num_rows) == (len(exported.train), len(exported.val))
    row = next(r for r in dataset["train"] if r["images"])
    assert row["images"][0].size == (320, 180) and row["messages"][0]["role"] == "system"


def test_export_workers_write_the_same_rows_and_parity_figures(run_dir: Path, tmp_path: Path, exported: ExportReport) -> None:
    pooled = export_run(RunReader(run_dir), ExportConfig(out_dir=str(tmp_path / "pooled"), val_fraction=0.34, workers=2))
    for split in ("train.jsonl", "val.jsonl"):
        assert rows(tmp_path / "pooled" / split) == rows(exported.out_dir / split)
    assert pooled.parity is not None and exported.parity is not None
    assert pooled.parity.to_json() == exported.parity.to_json() and pooled.parity.turns_checked > 0
    assert pooled.skipped == exported.skipped and pooled.figures()["tokens"] == exported.figures()["tokens"]
