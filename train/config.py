"""The root config of `python -m train.sft` (configs/sft.yaml), registered in Hydra's ConfigStore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore

from core.config import LLMConfig, RunConfig, TrackingConfig


@dataclass
class ModelSpec:
    id: str = "zai-org/GLM-4.6V-Flash"
    hub: str = "huggingface"  # huggingface | modelscope | local
    model_type: str = "glm4v"
    template: str = "glm4_5v"
    agent_template: str = "glm4_5"


@dataclass
class TrainArgs:
    dataset_dir: Optional[str] = None  # default: <run dir>/sft
    epochs: int = 5
    learning_rate: float = 1e-5
    global_batch_size: int = 32
    per_device_batch_size: int = 1
    max_length: int = 51_200
    deepspeed: str = "zero3"
    packing: bool = True
    freeze_vit: bool = True
    freeze_aligner: bool = True
    gradient_checkpointing: bool = True
    nproc_per_node: int = 8
    nnodes: int = 1
    dry_run: bool = False


@dataclass
class SFTConfig:
    run: RunConfig = field(default_factory=RunConfig)
    limit: Optional[int] = None
    llm: LLMConfig = field(default_factory=LLMConfig)  # accepted like every entry point; unused by training
    model: ModelSpec = field(default_factory=ModelSpec)
    train: TrainArgs = field(default_factory=TrainArgs)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)


ConfigStore.instance().store(name="sft_schema", node=SFTConfig)
