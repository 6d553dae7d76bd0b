"""The root config of `python -m eval.run` (configs/eval.yaml), stored in Hydra's ConfigStore by `store_schema`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Optional

from omegaconf import DictConfig

from agents.config import AGENT_PROMPTS, AgentSetup
from core.config import (
    Backend,
    ConfigError,
    LLMConfig,
    RayConfig,
    RoleConfig,
    RunConfig,
    TrackingConfig,
    resolve_role,
    store_config,
    to_typed,
    validate_common,
)
from core.llm.prices import check_caps, price_of
from pipeline.config import RolloutsConfig


def _scripted_judge() -> LLMConfig:
    return LLMConfig(backend=Backend.scripted, base_url="none://scripted", model="scripted-judge", temperature=0.0)


@dataclass
class JudgeConfig:
    """Content and Style (PPTEval's two steps), independent of the system under test (the `judge/` group).

    `endpoint` is the judge model (role `judge`): it scores each slide's description 1-5
    against the rubrics in eval/prompts/. The describer (role `describer`, a vision model)
    describes each slide image; its None fields inherit `endpoint`. A `scripted` backend is
    the rule-based stand-in (measurements of the slide, not a model).
    """

    endpoint: LLMConfig = field(default_factory=_scripted_judge)
    describer: RoleConfig = field(default_factory=RoleConfig)
    json_retries: int = 2  # re-asks after a malformed reply
    max_concurrency: int = 16  # slides (and batches of checks) judged at once
    checklist_batch: int = 1  # checks per call of the checklist judge (role checklist_judge); 1: a call per check
    cache_dir: Optional[str] = None  # descriptions and scores by slide image hash; None: <run dir>/judge_cache


@dataclass
class DiversityConfig:
    """Vendi score over image features of the rendered slides (DINOv2 in the paper)."""

    encoder: Optional[str] = None  # local path or hub id (e.g. facebook/dinov2-base); None: not measured
    batch_size: int = 16


@dataclass
class ReportConfig:
    """How this run is labelled in the tables (`python -m eval.report` tables several runs together)."""

    framework: str = "DeepPresenter"
    model: Optional[str] = None  # None: the agent's model name
    variant: Optional[str] = None  # Table 3 row; None: from `agents` and `reflection`


def _eval_rollouts() -> RolloutsConfig:
    return RolloutsConfig(runner="eval.runner:EvalRunner", split="eval")


@dataclass
class EvalConfig(AgentSetup):
    """`python -m eval.run`: the agents under test (`llm`) on held-out tasks, judged (configs/eval.yaml)."""

    PROMPTS: ClassVar[tuple[str, ...]] = (*AGENT_PROMPTS, "eval/prompts")  # in the config hash

    run: RunConfig = field(default_factory=lambda: RunConfig(name="eval"))
    limit: Optional[int] = None
    # A tasks parquet, a synthesis run directory (its tasks/eval.parquet), or presentbench:PATH, a local copy of
    # PresentBench's data (eval/presentbench.py: its cases with their own checklists).
    tasks: str = "runs/demo"
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    diversity: DiversityConfig = field(default_factory=DiversityConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    rollouts: RolloutsConfig = field(default_factory=_eval_rollouts)
    ray: RayConfig = field(default_factory=RayConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)


def describer_config(judge: JudgeConfig) -> LLMConfig:
    """The describer's endpoint: `judge.endpoint` with `judge.describer`'s non-None fields."""
    return resolve_role(judge.endpoint, {"describer": judge.describer}, "describer")


PRESENTBENCH = "presentbench:"


def presentbench_root(tasks: str) -> Optional[Path]:
    """The PresentBench data root `tasks=presentbench:PATH` names; None for a tasks file or run."""
    return Path(tasks.removeprefix(PRESENTBENCH)).expanduser().resolve() if tasks.startswith(PRESENTBENCH) else None


def tasks_file(tasks: str) -> Path:
    """`tasks=` as a parquet file: the file itself, or a synthesis run's tasks/eval.parquet."""
    path = Path(tasks).expanduser().resolve()
    return path / "tasks" / "eval.parquet" if path.is_dir() else path


def validate_judge(judge: DictConfig | JudgeConfig) -> None:
    if judge.max_concurrency < 1 or judge.json_retries < 0 or judge.checklist_batch < 1:
        raise ConfigError("judge.max_concurrency and judge.checklist_batch must be >= 1, judge.json_retries >= 0")


def store_schema() -> None:
    """Put EvalConfig in Hydra's ConfigStore as `eval_schema` (configs/eval.yaml's defaults name it);
    called before Hydra composes that config."""
    store_config("eval_schema", EvalConfig)


def validate(cfg: DictConfig) -> None:
    """Everything Hydra's types cannot say; raises ConfigError naming the key. What the config names is checked
    against the install by `eval.run.preflight`."""
    validate_common(cfg)
    validate_judge(cfg.judge)
    if cfg.diversity.batch_size < 1:
        raise ConfigError("diversity.batch_size must be >= 1")
    if cfg.ray.num_workers < 1 or cfg.ray.rollouts_per_worker < 1:
        raise ConfigError("ray.num_workers and ray.rollouts_per_worker must be >= 1")
    check_caps(cfg, ("agent",))
    if cfg.run.max_cost_usd is not None:
        judge = to_typed(JudgeConfig, cfg.judge)
        for role, endpoint in (("judge", judge.endpoint), ("describer", describer_config(judge))):
            if not price_of(endpoint).known:
                raise ConfigError(
                    f"run.max_cost_usd is set but the {role}'s price is unknown ({price_of(endpoint).source}): give judge.endpoint.price.*"
                )
    bench = presentbench_root(cfg.tasks)
    if bench is not None and not bench.is_dir():
        raise ConfigError(f"tasks={cfg.tasks}: {bench} is not a folder (a local copy of PresentBench's data)")
    if bench is None and not tasks_file(cfg.tasks).is_file():
        raise ConfigError(
            f"tasks={cfg.tasks}: no tasks file at {tasks_file(cfg.tasks)} "
            "(give a tasks parquet or a synthesis run directory; `python -m pipeline.tasks run.name=NAME` makes one)"
        )
