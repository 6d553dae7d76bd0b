"""What other packages (the critic) see after each step, and what they may put into the agent's context."""

from __future__ import annotations

from dataclasses import dataclass

from agents.tools.registry import Observation, ToolContext
from core.records import ToolCall


@dataclass(frozen=True)
class StepState:
    step: int
    calls: tuple[ToolCall, ...]
    observations: tuple[Observation, ...]  # in call order
    ctx: ToolContext


@dataclass(frozen=True)
class Injection:
    """A critic's review, entered into the agent's context as a `thinking` call and its result."""

    thought: str
    critic_model: str
    findings_json: str
    observation_ref: str
