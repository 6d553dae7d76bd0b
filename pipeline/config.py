"""The root config of `python -m pipeline.synthesize`, registered in Hydra's ConfigStore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from agents.config import AgentConfig, RenderConfig, ToolsConfig
from core.config import (
    ConfigError,
    LLMConfig,
    RayConfig,
    RoleConfig,
    RunConfig,
    TrackingConfig,
    validate_common,
)
from critic.config import CriticConfig
from filters.config import GATES, FiltersConfig

STAGES = ("tasks", "rollouts", "filters", "export", "report")


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
class SynthesizeConfig:
    run: RunConfig = field(default_factory=RunConfig)
    limit: Optional[int] = None  # process at most N tasks: a quick preview
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    llm: LLMConfig = field(default_factory=LLMConfig)
    roles: dict[str, RoleConfig] = field(default_factory=dict)  # agent, critic, judge, task_writer, ...
    agent: AgentConfig = field(default_factory=AgentConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)


def validate(cfg: DictConfig) -> None:
    """Everything Hydra's types cannot say; raises ConfigError naming the key."""
    validate_common(cfg)
    unknown = [s for s in cfg.stages if s not in STAGES]
    if unknown:
        raise ConfigError(f"stages={list(cfg.stages)}: unknown {unknown}; known: {list(STAGES)}")
    unknown = [g for g in cfg.filters.gates if g not in GATES]
    if unknown:
        raise ConfigError(f"filters.gates={list(cfg.filters.gates)}: unknown {unknown}; known: {list(GATES)}")
    if cfg.ray.num_workers < 1 or cfg.ray.rollouts_per_worker < 1:
        raise ConfigError("ray.num_workers and ray.rollouts_per_worker must be >= 1")
    shares = [s.share for s in cfg.sources.values() if s.enabled]
    if any(s < 0 for s in shares) or (shares and abs(sum(shares) - 1.0) > 1e-6):
        raise ConfigError(f"sources.*.share of enabled sources must be >= 0 and sum to 1 (got {shares})")


ConfigStore.instance().store(name="synthesize_schema", node=SynthesizeConfig)
