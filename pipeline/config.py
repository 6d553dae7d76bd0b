"""The root config of `python -m pipeline.synthesize` (configs/synthesize.yaml), stored in Hydra's ConfigStore by `store_schema`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Optional

from omegaconf import DictConfig

from agents.config import AGENT_PROMPTS, AgentSetup
from core.config import (
    Backend,
    ConfigError,
    RayConfig,
    RoleConfig,
    RunConfig,
    TrackingConfig,
    role_slots,
    store_config,
    to_typed,
    validate_common,
)
from core.llm.prices import check_caps
from critic.config import CriticConfig
from filters.config import FiltersConfig, validate_filters
from train.config import ExportConfig, validate_export

ASPECTS = ("16:9", "4:3", "A1", "A2", "A3", "A4", "free")
SYNTHESIS_ROLES = ("agent", "critic", "task_writer", "judge", "quality_judge")


@dataclass
class SourceConfig:
    """One task source; `path` (local files) wins over `hub_id`."""

    enabled: bool = True
    hub_id: Optional[str] = None
    subset: Optional[str] = None
    path: Optional[str] = None
    licence: Optional[str] = None
    share: float = 0.0  # share of the tasks drawn from this source


@dataclass
class SourcesConfig:
    persona: SourceConfig = field(default_factory=SourceConfig)
    arxiv: SourceConfig = field(default_factory=SourceConfig)
    finepdfs: SourceConfig = field(default_factory=SourceConfig)


@dataclass
class ConstraintMix:
    """Probabilities of each constraint bucket (the paper's task mix by default)."""

    slides: dict[str, float] = field(default_factory=lambda: {"1-10": 0.28, "11-20": 0.22, "free": 0.50})
    aspect: dict[str, float] = field(default_factory=lambda: {"16:9": 0.28, "4:3": 0.26, "A1": 0.03, "free": 0.43})
    language_explicit: float = 0.5  # share of tasks whose language is an explicit constraint


@dataclass
class TasksConfig:
    count: int = 1152  # tasks to write before cleaning (limit=N caps it)
    eval_size: int = 128  # held-out tasks at `count`; scaled down with fewer tasks
    persona_zh_share: float = 0.48  # scripted writer: share of persona tasks written in Chinese
    knowledge_grounded_share: float = 0.5  # persona tasks given a synthesized knowledge note
    audiences: list[str] = field(
        default_factory=lambda: ["beginners", "intermediate learners", "domain experts", "peer researchers"]
    )
    scenarios: list[str] = field(default_factory=lambda: ["lecture", "seminar", "defense", "conference talk"])
    dedup_threshold: float = 0.8  # MinHash Jaccard above which two instructions are duplicates
    decontam_threshold: float = 0.6  # near-duplicates across train/eval are kept on one side
    quality_gate: bool = True
    json_retries: int = 2  # re-asks after a malformed JSON reply
    min_chars: int = 30
    max_chars: int = 3000
    constraints: ConstraintMix = field(default_factory=ConstraintMix)


class KeepRenders(str, Enum):
    """Which slide images a finished rollout keeps (pipeline/pack.py)."""

    inspected = "inspected"  # the renders a model was shown, and the final previews
    final = "final"  # the final previews only: its trajectories can no longer be exported with their images
    all = "all"  # every render and preview


@dataclass
class RolloutsConfig:
    runner: str = "pipeline.runner:DeckRunner"  # import path of the class that plays one task
    max_wall_s: float = 3600.0  # per rollout, both agents together
    max_attempts: int = 3  # a rollout whose worker died is resubmitted up to this many times in all
    error_window: int = 20  # early stop: failure share over the last N finished rollouts ...
    max_error_rate: float = 0.8  # ... above this stops the run with a clear message
    split: str = "train"  # which task split to roll out
    max_cost_usd: Optional[float] = None  # per rollout: once spent, its agent's next model call is refused (agent/budget)
    keep_renders: KeepRenders = KeepRenders.inspected  # which slide images a finished rollout keeps (pipeline/pack.py)
    per_task: int = 1  # rollouts of each task (keyed <task_id>~k after the first): preference pairs need more than one


@dataclass
class SynthesizeConfig(AgentSetup):
    PROMPTS: ClassVar[tuple[str, ...]] = (
        *AGENT_PROMPTS,
        "critic/prompts",
        "filters/prompts",
        "pipeline/prompts",
    )  # in the config hash

    run: RunConfig = field(default_factory=RunConfig)
    limit: Optional[int] = None  # process at most N tasks: a quick preview
    stages: Optional[list[str]] = None  # a part of the recipe (pipeline/synthesize.py STAGES); None: all of it
    roles: dict[str, RoleConfig] = field(default_factory=role_slots(*SYNTHESIS_ROLES))
    critic: CriticConfig = field(default_factory=CriticConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    tasks: TasksConfig = field(default_factory=TasksConfig)
    rollouts: RolloutsConfig = field(default_factory=RolloutsConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)


def store_schema() -> None:
    """Put SynthesizeConfig in Hydra's ConfigStore as `synthesize_schema` (configs/synthesize.yaml's defaults name it);
    called before Hydra composes that config."""
    store_config("synthesize_schema", SynthesizeConfig)


def validate(cfg: DictConfig) -> None:
    """Everything Hydra's types cannot say; raises ConfigError naming the key. What the config names is checked
    against the install by `pipeline.preflight`."""
    validate_common(cfg)
    validate_export(to_typed(ExportConfig, cfg.export))
    validate_filters(to_typed(FiltersConfig, cfg.filters))
    if cfg.rollouts.per_task < 1:
        raise ConfigError(f"rollouts.per_task={cfg.rollouts.per_task}: must be >= 1 (rollouts of each task)")
    if cfg.rollouts.per_task > 1 and cfg.llm.temperature <= 0:
        raise ConfigError(
            f"rollouts.per_task={cfg.rollouts.per_task} with llm.temperature={cfg.llm.temperature}: a task's rollouts "
            "differ only by sampling, so greedy decoding would play the same rollout N times (set llm.temperature > 0)"
        )
    if cfg.ray.num_workers < 1 or cfg.ray.rollouts_per_worker < 1:
        raise ConfigError("ray.num_workers and ray.rollouts_per_worker must be >= 1")
    check_caps(cfg, SYNTHESIS_ROLES)
    if cfg.ray.address and Backend.local in {cfg.llm.backend, *(r.backend for r in cfg.roles.values())}:
        raise ConfigError(
            f"llm=local serves on this machine's loopback, which the nodes of ray.address={cfg.ray.address} cannot reach: serve the model with vLLM (llm=vllm)"
        )
    if cfg.ray.threads_per_worker < 0:
        raise ConfigError(
            f"ray.threads_per_worker={cfg.ray.threads_per_worker}: must be >= 0 (0 runs CPU-bound steps on the worker's event loop)"
        )
    if not 0 <= cfg.tasks.eval_size < cfg.tasks.count:
        raise ConfigError(f"tasks.eval_size={cfg.tasks.eval_size} must be >= 0 and below tasks.count={cfg.tasks.count}")
    for name, mix in (("slides", cfg.tasks.constraints.slides), ("aspect", cfg.tasks.constraints.aspect)):
        if any(p < 0 for p in mix.values()) or sum(mix.values()) <= 0:
            raise ConfigError(f"tasks.constraints.{name}: probabilities must be >= 0 with a positive sum")
    bad = [k for k in cfg.tasks.constraints.slides if k != "free" and not _is_range(k)]
    if bad:
        raise ConfigError(f"tasks.constraints.slides: bucket(s) {bad} are not 'free' or 'A-B' with 1 <= A <= B")
    bad = [k for k in cfg.tasks.constraints.aspect if k not in ASPECTS]
    if bad:
        raise ConfigError(f"tasks.constraints.aspect: unknown aspect(s) {bad}; known: {list(ASPECTS)}")
    shares = [s.share for s in cfg.sources.values() if s.enabled]
    if any(s < 0 for s in shares) or (shares and abs(sum(shares) - 1.0) > 1e-6):
        raise ConfigError(f"sources.*.share of enabled sources must be >= 0 and sum to 1 (got {shares})")


def _is_range(bucket: str) -> bool:
    lo, _, hi = bucket.partition("-")
    return lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi)
