"""What a gate (`core.protocols.Gate`) sees of a finished rollout: the Candidate. Its artifacts are read through the
run's reader; one that is missing or unreadable raises `core.records.ArtifactError` (an `environment` verdict)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.records import Rollout, Task, Trajectory
from core.run.reader import RunReader
from core.seams.deck import DeckReport

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


@dataclass(frozen=True)
class Candidate:
    """A finished rollout up for filtering, with its task and the run it belongs to."""

    task: Task
    rollout: Rollout
    run: RunReader

    @property
    def language(self) -> str:
        """The deck's language by name, as judges are told it."""
        code = self.task.constraints.language or self.task.language
        return LANGUAGE_NAMES.get(code, code)

    def path(self, artifact: str) -> Path:
        """The artifact's absolute path; ArtifactError when the rollout did not record it."""
        return self.run.artifact(self.rollout, artifact)

    def trajectories(self) -> list[Trajectory]:
        """Every agent's trajectory (researcher, presenter, or single), in artifact order."""
        return self.run.trajectories(self.rollout)

    def deck(self) -> DeckReport:
        """What the deck export measured, per slide (deck_defects.json); its previews resolve in `workspace()`."""
        return self.run.deck(self.rollout)

    def deck_text(self) -> Any:
        """The deck's text as the export read it (deck/text.py); None when it wrote none."""
        return self.run.deck_text(self.rollout)

    def workspace(self) -> Path:
        return self.run.workspace(self.rollout)
