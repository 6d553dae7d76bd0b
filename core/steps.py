"""What one agent step shows a step hook (`core.protocols.StepHook`), and what the hook may put into the agent's context."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.records import ToolCall


@dataclass(frozen=True)
class Observation:
    """What one tool call returned."""

    text: str
    images: tuple[str, ...] = ()  # workspace-relative paths
    is_error: bool = False
    data: dict[str, Any] | None = None  # structured result for step hooks (the critic); never sent to the model
    items: tuple[str, ...] = ()  # what the result lists, by identity (search hits' URLs): new ones are progress


@dataclass(frozen=True)
class StepState:
    step: int
    calls: tuple[ToolCall, ...]
    observations: tuple[Observation, ...]  # in call order
    workspace: Path  # the agent's workspace root: what the observations' paths are relative to


@dataclass(frozen=True)
class Injection:
    """A critic's review, entered into the agent's context as a `thinking` call and its result."""

    thought: str
    critic_model: str
    findings_json: str
    observation_ref: str
