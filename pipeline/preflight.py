"""Before any work of `python -m pipeline.synthesize` (or `pipeline.tasks`): the config checked
(`pipeline.config.validate`), then what it names checked against this install, which the config layer
cannot see: the model backends (core.llm.players.BACKENDS), the gates (filters.registry.GATES), the research
tools' backends and keys and the commands' jail (agents.research.runtime). Each failure is a ConfigError
naming the key: the run exits 2 before it starts."""

from __future__ import annotations

from omegaconf import DictConfig

from agents.config import ToolsConfig
from agents.research.runtime import validate_tools_config
from core.config import to_typed
from core.llm.players import check_backends
from filters.run import check_gates
from pipeline.config import validate


def preflight(cfg: DictConfig) -> None:
    validate(cfg)
    check_backends(cfg)
    check_gates(cfg.filters.gates)
    validate_tools_config(to_typed(ToolsConfig, cfg.tools))
