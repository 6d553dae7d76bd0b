"""What a gate declares of itself (GateSpec), and the verdict an artifact error becomes.

Each gate module ends with its `SPEC`; `filters.registry.GATES` lists them, and
`filters.run` builds every gate named in `filters.gates` from that list. A gate
judges a `core.seams.candidate.Candidate` and returns one Verdict; when an artifact it
needs is missing or unreadable it raises `core.seams.candidate.ArtifactError`, which
becomes an `environment` verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from core.protocols import Gate, Play
from core.records import Verdict
from filters.config import FiltersConfig

SCRIPTED_LABEL = "rule-based stand-in for the judge (llm=scripted), not a model"


def environment_verdict(task_id: str, gate: str, reason: str) -> Verdict:
    return Verdict(task_id=task_id, gate=gate, passed=False, category="environment", score=0.0, reasons=(reason,))


@dataclass(frozen=True)
class GateSpec:
    """A gate as the filters stage knows it: its failed verdicts carry the category `name` unless it names its own.

    A rule gate gives `build`; a judge gate gives its `role` (`roles.<role>`) and `players`: the gate judged by
    the role's model, or by its rule-based stand-in (the scripted backend)."""

    name: str  # what `filters.gates` calls it
    build: Callable[[FiltersConfig], Gate] | None = None
    role: str | None = None
    players: Callable[[FiltersConfig], Play[Gate]] | None = None
    own_categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.build is None) == (self.players is None) or (self.players is None) != (self.role is None):
            raise ValueError(f"gate {self.name}: give build (a rule gate) or role and players (a judge gate)")

    @property
    def categories(self) -> tuple[str, ...]:
        """The failure categories its verdicts carry, in report order."""
        return self.own_categories or (self.name,)
