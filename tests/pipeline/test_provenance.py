"""`python -m pipeline.provenance RUN_DIR`: which template versions and models made which share of the accepted samples."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from core.records import ModelUse, Origin, Task, Verdict, read_parquet, write_parquet
from core.run.store import RunStore
from fakes.runs import build_run, training_run
from pipeline.provenance import main

WRITER = Origin({"pipeline/prompts/persona_task.j2": "cccccccccccc"}, {"task_writer": ModelUse("writer-model", temperature=1.0)})
JUDGE = Origin({"filters/prompts/quality.j2": "dddddddddddd"}, {"quality_judge": ModelUse("judge-model", temperature=0.0)})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose tasks and quality verdicts name their origin, and one presenter made with an edited template."""
    root = build_run(tmp_path_factory.mktemp("provenance") / "run", training_run())
    for split in ("train", "eval"):
        path = root / "tasks" / f"{split}.parquet"
        write_parquet([dataclasses.replace(t, origin=WRITER) for t in read_parquet(path, Task)], path, Task)
    store = RunStore(root)
    for unit, verdict in store.load_map("verdicts", Verdict).items():  # the verdicts as the filters stage published them
        if verdict.gate == "quality":
            store.path("units", "verdicts", f"{unit}.json").unlink()
            store.commit("verdicts", unit, dataclasses.replace(verdict, origin=JUDGE))
    store.compact("verdicts", Verdict)
    edited = root / "rollouts" / "task-0000" / "trajectory_presenter.json"
    data = json.loads(edited.read_text())
    data["origin"]["templates"] = {"agents/roles/prompts/presenter.en.j2": "eeeeeeeeeeee"}
    edited.write_text(json.dumps(data))
    return root


def test_the_breakdown_names_each_template_version_and_model_with_its_share(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "6 samples (one per agent trajectory) of 3 rollouts, accepted by the gates: constraint, consistency, quality" in out
    assert "| `agents/roles/prompts/presenter.en.j2` | `bbbbbbbbbbbb` | 2 | 33.3% |" in out  # the edited template: its own row
    assert "| `agents/roles/prompts/presenter.en.j2` | `eeeeeeeeeeee` | 1 | 16.7% |" in out
    assert "| `pipeline/prompts/persona_task.j2` | `cccccccccccc` | 6 | 100.0% |" in out  # each sample's task's template
    assert "| quality_judge: judge-model [openai; t=0] | 6 | 100.0% |" in out  # and its verdicts'


def test_every_finished_rollout_as_json(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(run_dir), "--all", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["rollouts"], found["samples"]) == (4, 8) and found["rule"] == "every finished rollout (--all)"
    assert {"model": "task_writer: writer-model [openai; t=1]", "samples": 8, "share": 1.0} in found["models"]


def test_a_directory_that_is_not_a_run_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(f"{tmp_path.resolve()} is not a run directory (no config.yaml, tasks/ or units/)")
    )
