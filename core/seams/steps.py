"""What one agent step shows a step hook (`core.protocols.StepHook`), and what the hook may put into the agent's context."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.defects import Defect, ManuscriptIssue
from core.records import ToolCall


@dataclass(frozen=True)
class SlideMeasured:
    """What inspect_slide measured of one slide."""

    artifact: str  # workspace-relative HTML
    png: str  # workspace-relative render
    aspect: str
    width: int
    height: int
    defects: tuple[Defect, ...]


@dataclass(frozen=True)
class ManuscriptReport:
    """What the manuscript checks found in one manuscript (agents/manuscript.py)."""

    slides: int
    language: str
    issues: tuple[ManuscriptIssue, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"slides": self.slides, "language": self.language, "issues": [i.to_dict() for i in self.issues]}


@dataclass(frozen=True)
class ManuscriptMeasured:
    """What inspect_manuscript measured of one manuscript."""

    artifact: str  # workspace-relative markdown
    report: ManuscriptReport
    constraints: str  # what the task asks of it, as the critic is told ("none")


Measured = SlideMeasured | ManuscriptMeasured


@dataclass(frozen=True)
class Observation:
    """What one tool call returned."""

    text: str
    images: tuple[str, ...] = ()  # workspace-relative paths
    is_error: bool = False
    measured: Measured | None = None  # an inspection's figures, for step hooks (the critic); never sent to the model
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
