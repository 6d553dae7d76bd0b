"""What a gate sees of a finished rollout (Candidate), what it declares of itself (GateSpec), and its errors.

Each gate module ends with its `SPEC`; `filters.registry.GATES` lists them, and
`filters.run` builds every gate named in `filters.gates` from that list. A gate
returns one Verdict; when an artifact it needs is missing or unreadable it raises
`ArtifactError`, which becomes an `environment` verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from core.protocols import Gate, Model
from core.records import RecordError, Rollout, Task, Trajectory, Verdict
from filters.config import FiltersConfig

SCRIPTED_LABEL = "rule-based stand-in for the judge (llm=scripted), not a model"
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


class ArtifactError(Exception):
    """An artifact a gate needs is missing or unreadable: an environment failure of the rollout."""


def environment_verdict(task_id: str, gate: str, reason: str) -> Verdict:
    return Verdict(task_id=task_id, gate=gate, passed=False, category="environment", score=0.0, reasons=(reason,))


@dataclass(frozen=True)
class Candidate:
    """A finished rollout up for filtering, with its task; artifact paths are run-relative."""

    task: Task
    rollout: Rollout
    root: Path  # the run directory

    @property
    def language(self) -> str:
        """The deck's language by name, as judges are told it."""
        code = self.task.constraints.language or self.task.language
        return LANGUAGE_NAMES.get(code, code)

    def path(self, artifact: str) -> Path:
        """The artifact's absolute path; ArtifactError when the rollout did not record it."""
        relative = self.rollout.artifacts.get(artifact)
        if relative is None:
            raise ArtifactError(f"{self.task.task_id}: the rollout recorded no {artifact!r} artifact")
        return self.root / relative

    def trajectories(self) -> list[Trajectory]:
        """Every agent's trajectory (researcher, presenter, or single), in artifact order."""
        names = [name for name in self.rollout.artifacts if name.startswith("trajectory:")]
        if not names:
            raise ArtifactError(f"{self.task.task_id}: the rollout recorded no trajectory")
        return [_read_trajectory(self.path(name)) for name in names]

    def defects(self) -> dict[str, Any]:
        """deck_defects.json: {"aspect": ..., "slides": [{"file", "png", "defects": [...]}]}."""
        path = self.path("defects")
        data = _read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("slides"), list):
            raise ArtifactError(f"{path}: not a deck defects file (no 'slides' list)")
        return data


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: unreadable ({exc})") from exc


def _read_trajectory(path: Path) -> Trajectory:
    data = _read_json(path)
    try:
        return Trajectory.from_dict(data)
    except (RecordError, TypeError) as exc:
        raise ArtifactError(f"{path}: not a trajectory record ({exc})") from exc


GateFactory = Callable[[FiltersConfig, Optional[Model]], Gate]  # the judge model is None with llm=scripted


@dataclass(frozen=True)
class GateSpec:
    """A gate as the filters stage knows it: its failed verdicts carry the category `name` unless it names its own."""

    name: str  # what `filters.gates` calls it
    build: GateFactory
    role: str | None = None  # the judge role (`roles.<role>`) the gate calls; None for rule gates
    own_categories: tuple[str, ...] = ()

    @property
    def categories(self) -> tuple[str, ...]:
        """The failure categories its verdicts carry, in report order."""
        return self.own_categories or (self.name,)
