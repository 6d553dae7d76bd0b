"""What several pipeline tests share: tasks for the fake runner (fakes.runner), and whole runs of the pipeline started
as a user starts them (scripted, or with every role played by the fake model, fakes.model)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import PROJECT_ROOT
from core.records import Task
from core.run.context import RunContext
from core.run.store import atomic_write_parquet

ENV = {**os.environ, "WANDB_MODE": "disabled", "RAY_AUTH_MODE": "disabled"}
RUNNER = "rollouts.runner=fakes.runner:ScriptedRunner"


def write_tasks(ctx: RunContext, words: list[str], ids: list[str] | None = None) -> list[Task]:
    """tasks/train.parquet of one task per word (the fake runner reads its words: fakes.runner), ids t00, t01... unless given."""
    ids = ids or [f"t{i:02d}" for i in range(len(words))]
    tasks = [Task(task_id, "manual", f"make a deck {w}", "en", split="train") for task_id, w in zip(ids, words, strict=True)]
    (ctx.store.root / "tasks").mkdir(exist_ok=True)
    atomic_write_parquet(tasks, ctx.store.root / "tasks" / "train.parquet", Task)
    return tasks


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """A command from the project root, its output captured."""
    return subprocess.run(list(args), cwd=PROJECT_ROOT, env=ENV, capture_output=True, text=True, timeout=300, check=False)


def synthesize_scripted(root: Path, *overrides: str) -> None:
    """`python -m pipeline.synthesize limit=3` with the scripted policy into `root`; it must succeed."""
    command = [sys.executable, "-m", "pipeline.synthesize", f"run.dir={root}", "limit=3", "tracking=disabled", *overrides]
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def filter_and_export(played: Path, root: Path, *overrides: str) -> Path:
    """A copy at `root` of a run whose tasks and rollouts stages are done, run on through the filters, export and
    report stages with `overrides` (nothing the filters configure reaches the stages before them)."""
    shutil.copytree(played, root)
    synthesize_scripted(root, "stages=[filters,export,report]", *overrides)
    return root


def every_role_command(run_dir: Path, url: str, *overrides: str, llm: str = "openai") -> list[str]:
    """The command of the whole pipeline with every role played by the fake model (fakes.model.every_role), all priced;
    `llm` names the configs/llm preset (and so the profile) the fake stands for."""
    return [
        sys.executable,
        "-m",
        "pipeline.synthesize",
        f"run.dir={run_dir}",
        "tracking=disabled",
        "limit=3",
        "tasks.count=6",
        "tasks.eval_size=1",
        f"llm={llm}",
        f"llm.base_url={url}",
        "llm.model=fake",
        "llm.backoff_base_s=0.01",
        "llm.price.input_per_mtok=1",
        "llm.price.output_per_mtok=4",
        "critic=extrinsic",
        "filters.gates=[consistency,quality]",
        "ray.num_workers=1",
        "ray.rollouts_per_worker=3",
        *overrides,
    ]  # the judges see every finished deck


@dataclass(frozen=True)
class FakeSynthesis:
    """A whole run against the fake OpenAI server and what the server saw."""

    root: Path
    done: subprocess.CompletedProcess[str]
    requests: list[dict[str, Any]]
    refused: list[tuple[int, str]]
    served: int
