"""The eval config: what is checked before any work, and how `tasks=` is read."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from agents.config import AgentSetup
from core.config import PROJECT_ROOT, ConfigError
from core.records import Task, write_parquet
from eval.config import EvalConfig, store_schema, tasks_file, validate
from eval.runner import inference_config


@pytest.fixture
def synthesis_run(tmp_path: Path) -> Path:
    (tmp_path / "run" / "tasks").mkdir(parents=True)
    write_parquet([Task("t", "persona", "A deck.", "en")], tmp_path / "run" / "tasks" / "eval.parquet", Task)
    return tmp_path / "run"


def eval_config(*overrides: str):
    store_schema()
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
        return compose("eval", overrides=list(overrides))


def test_tasks_is_a_parquet_or_a_synthesis_run(synthesis_run: Path) -> None:
    assert tasks_file(str(synthesis_run)) == synthesis_run / "tasks" / "eval.parquet"
    assert tasks_file(str(synthesis_run / "tasks" / "eval.parquet")) == synthesis_run / "tasks" / "eval.parquet"
    validate(eval_config(f"tasks={synthesis_run}", "judge=openai", "llm=vllm", "agents=single", "reflection=none"))


@pytest.mark.parametrize("override", ["agents=triple", "reflection=maybe"])
def test_a_mode_outside_its_set_fails_as_the_config_is_composed(override: str) -> None:
    with pytest.raises(ConfigCompositionException, match=override):
        eval_config(override)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("judge.max_concurrency=0", "judge.max_concurrency"),
        ("diversity.batch_size=0", "diversity.batch_size"),
        ("ray.num_workers=0", "ray.num_workers"),
    ],
)
def test_semantic_errors_name_the_key(synthesis_run: Path, override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(eval_config(f"tasks={synthesis_run}", override))


def test_the_runner_plays_without_a_critic(synthesis_run: Path) -> None:
    cfg: EvalConfig = OmegaConf.to_object(eval_config(f"tasks={synthesis_run}", "agents=single", "reflection=none"))
    synth = inference_config(cfg)
    assert (synth.critic.mode.value, synth.agents, synth.reflection, synth.llm) == ("none", "single", "none", cfg.llm)
    setup = OmegaConf.to_object(eval_config(f"tasks={synthesis_run}", "deck.pptx_mode=picture", "render.device_scale_factor=1.5"))
    assert all(getattr(inference_config(setup), f.name) == getattr(setup, f.name) for f in fields(AgentSetup))  # whole
    assert cfg.rollouts.runner == "eval.runner:EvalRunner"


def test_missing_tasks_fail_before_any_work(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "eval.run", "tasks=nowhere", f"run.dir={tmp_path / 'run'}", "tracking=disabled"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "tasks=nowhere" in done.stderr and "pipeline.tasks" in done.stderr
    assert not (tmp_path / "run").exists()
