"""Config composition, validation errors and the run hash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from agents.config import store_schema as store_generate_schema
from core.config import PROJECT_ROOT, ConfigError, LLMConfig, RoleConfig, config_hash, resolve_role, to_plain, validate_common
from eval.config import store_schema as store_eval_schema
from pipeline.config import store_schema as store_synthesize_schema
from pipeline.preflight import preflight
from pipeline.stages import chosen
from pipeline.synthesize import STAGES
from train.config import store_schema as store_sft_schema

CONFIGS = PROJECT_ROOT / "configs"
STORE_SCHEMA = {
    "synthesize": store_synthesize_schema,
    "sft": store_sft_schema,
    "eval": store_eval_schema,
    "generate": store_generate_schema,
}


def synth(*overrides: str, name: str = "synthesize"):
    STORE_SCHEMA[name]()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(name, overrides=list(overrides))


PRIMARIES = ("synthesize", "sft", "eval", "generate")


def group_options() -> list[tuple[str, str, str]]:
    """(primary config, group, option) for every option of every group a primary config uses."""
    found = []
    for primary in PRIMARIES:
        defaults = yaml.safe_load((CONFIGS / f"{primary}.yaml").read_text())["defaults"]
        groups = [next(iter(d)) for d in defaults if isinstance(d, dict) and not next(iter(d)).startswith("override")]
        found += [(primary, g, f.stem) for g in groups for f in sorted((CONFIGS / g).glob("*.yaml"))]
    return found


def test_every_group_is_used_by_an_entry_point() -> None:
    used = {g for _, g, _ in group_options()}
    assert used == {d.name for d in CONFIGS.iterdir() if d.is_dir()}


@pytest.mark.parametrize(("primary", "group", "option"), group_options())
def test_every_group_option_composes(primary: str, group: str, option: str) -> None:
    cfg = synth(f"{group}={option}", name=primary)
    if primary == "synthesize":
        preflight(cfg)
    elif "run" in cfg:  # generate (one deck, no run directory) has no run
        validate_common(cfg)
    OmegaConf.to_object(cfg)  # the typed object Ray workers receive


@pytest.mark.parametrize("entry_point", ["synthesize", "sft", "eval"])
def test_every_entry_point_takes_the_common_overrides(entry_point: str) -> None:
    cfg = synth("run.dir=/tmp/x", "run.name=n", "limit=2", "llm=openai", name=entry_point)
    validate_common(cfg)
    assert (cfg.run.dir, cfg.limit, cfg.llm.backend) == ("/tmp/x", 2, "openai")
    with pytest.raises(ConfigCompositionException):
        synth("no_such_key=1", name=entry_point)


def test_common_overrides() -> None:
    cfg = synth("run.name=x", "limit=3", "llm=vllm", "llm.model=m")
    assert to_plain(cfg)["run"]["dir"] == "runs/x"
    assert cfg.limit == 3 and cfg.llm.model == "m" and cfg.llm.base_url.startswith("http://127.0.0.1")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("no_such_key=1", "no_such_key"),
        ("llm.no_such=1", "no_such"),
        ("limit=abc", "limit"),
        ("critic.mode=loud", "loud"),
        ("llm.max_concurrency=many", "max_concurrency"),
        ("llm=nope", "nope"),
    ],
)
def test_typos_and_wrong_types_fail_before_work(override: str, message: str) -> None:
    with pytest.raises((ConfigCompositionException, ValidationError)) as err:
        synth(override)
    assert message in str(err.value) + str(err.value.__cause__)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("limit=0", "limit=0"),
        ("filters.gates=[taste]", "taste"),
        ("llm.backend=carrier-pigeon", "llm.backend=carrier-pigeon: unknown backend"),
        ("roles.critic.backend=carrier-pigeon", "roles.critic.backend=carrier-pigeon"),
        ("run.name=a/b", "run.dir"),
        ("sources.persona.share=0.9", "sum to 1"),
        ("ray.num_workers=0", "ray.num_workers"),
        ("rollouts.per_task=0", "rollouts.per_task=0"),
        ("ray.threads_per_worker=-1", "ray.threads_per_worker=-1"),
        ("llm.context_window=0", "llm.context_window=0"),
        ("llm.profile=vllm", "llm.profile=vllm: unknown profile; known: openai, vllm-glm"),
        ("roles.critic.profile=gpt", "roles.critic.profile=gpt: unknown profile"),
        ("ray.address=auto", "llm=local serves on this machine's loopback"),
    ],
)
def test_semantic_errors_name_the_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        preflight(synth(override, *(["llm=local"] if override.startswith("ray.address") else [])))


def test_several_rollouts_per_task_need_sampling() -> None:
    with pytest.raises(ConfigError, match="rollouts.per_task=3 with llm.temperature=0.0"):
        preflight(synth("rollouts.per_task=3", "llm=openai", "llm.temperature=0"))


def test_a_stage_outside_the_recipe_is_named() -> None:
    with pytest.raises(ConfigError, match=r"stages=\['tasks', 'nope'\]: unknown \['nope'\]"):
        chosen(STAGES, ["tasks", "nope"])
    assert list(chosen(STAGES, ["report", "tasks"])) == ["tasks", "report"]  # the recipe's order


def test_hash_ignores_performance_settings_only() -> None:
    base = config_hash(synth())
    assert config_hash(synth("ray.num_workers=7", "llm.max_concurrency=3", "limit=5", "tracking=disabled", "run.name=z")) == base
    assert config_hash(synth("llm.model=other")) != base
    assert config_hash(synth("critic=rules")) != base


def test_role_overrides_inherit_the_backbone() -> None:
    llm = LLMConfig(model="backbone", temperature=0.7)
    critic = resolve_role(llm, {"critic": RoleConfig(model="critic-vlm", temperature=0.0)}, "critic")
    assert (critic.model, critic.temperature, critic.base_url) == ("critic-vlm", 0.0, llm.base_url)
    assert resolve_role(llm, {}, "judge") == llm


def test_cli_from_another_directory(tmp_path: Path) -> None:
    run = tmp_path / "r"
    out = subprocess.run(
        [sys.executable, "-m", "pipeline.synthesize", "--cfg", "job", f"run.dir={run}", "limit=3", "llm=openai"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(run) in out and "limit: 3" in out and "backend: openai" in out
    bad = subprocess.run([sys.executable, "-m", "pipeline.synthesize", "limit=abc"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode != 0 and "limit" in bad.stderr and not (tmp_path / "runs").exists()
