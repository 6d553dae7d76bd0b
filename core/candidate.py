"""What a gate (`core.protocols.Gate`) sees of a finished rollout: the Candidate, and the ArtifactError it raises
when an artifact the gate needs is missing or unreadable (an `environment` verdict)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.records import RecordError, Rollout, Task, Trajectory

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


class ArtifactError(Exception):
    """An artifact a gate needs is missing or unreadable: an environment failure of the rollout."""


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
