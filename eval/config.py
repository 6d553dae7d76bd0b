"""The root config of `python -m eval.run` (configs/eval.yaml), registered in Hydra's ConfigStore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore

from agents.config import AgentConfig, RenderConfig, ToolsConfig
from core.config import LLMConfig, RayConfig, RoleConfig, RunConfig, TrackingConfig


@dataclass
class EvalConfig:
    run: RunConfig = field(default_factory=lambda: RunConfig(name="eval"))
    limit: Optional[int] = None
    tasks: Optional[str] = None  # a tasks parquet; default: <synthesis run>/tasks/eval.parquet
    llm: LLMConfig = field(default_factory=LLMConfig)
    roles: dict[str, RoleConfig] = field(default_factory=dict)  # describer, judge
    agent: AgentConfig = field(default_factory=AgentConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    reflection: str = "grounded"  # grounded | none
    agents: str = "dual"  # dual | single
    diversity_encoder: Optional[str] = None  # local path or hub id of an image encoder (DINOv2 in the paper)
    ray: RayConfig = field(default_factory=RayConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)


ConfigStore.instance().store(name="eval_schema", node=EvalConfig)
