"""One definition of "accepted": the filter report, the export, the run report and eval all read it here.

A rollout is accepted when it finished and every gate configured for the run
(`filters.gates` in its config.yaml) gave a verdict and passed. A failed verdict rejects
it, under its first failing category in pipeline order (environment, then each gate's
categories as configured: the content gate has one per check). A finished rollout with
no failed verdict but a missing one (its judge gave none) is undecided: neither
accepted nor a failure, and never exported unless asked for. With no gates configured
every finished rollout is accepted. A rollout that did not finish is rejected as
`environment`, whether or not the filters have written its verdict yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from core.records import Rollout, RolloutStatus, Verdict
from core.run.reader import RunReader
from filters.config import DEFAULT_GATES
from filters.registry import GATES

ENVIRONMENT = "environment"
UNDECIDED = "undecided"  # a configured gate has no verdict (its judge failed): neither accepted nor a failure category


@dataclass(frozen=True)
class Acceptance:
    task_id: str
    category: str | None  # None: accepted; else a failure category (environment, a gate's category) or undecided
    reasons: tuple[str, ...]

    @property
    def accepted(self) -> bool:
        return self.category is None

    @property
    def rejected(self) -> bool:
        return self.category not in (None, UNDECIDED)


def configured_gates(config: dict[str, Any]) -> list[str]:
    """The gates a run's resolved config names (`filters.gates`); the defaults when it names none."""
    filters = config.get("filters") or {}
    return list(filters["gates"]) if "gates" in filters else list(DEFAULT_GATES)


def run_gates(run: RunReader) -> list[str]:
    """The gates configured for `run` (its config.yaml; the defaults when there is none)."""
    return configured_gates(run.config())


def judged(run: RunReader) -> Iterator[tuple[Rollout, Acceptance]]:
    """Each of the run's rollouts with its fate under the run's gates, in task id order (before the filters ran: every
    finished one undecided); one pass over the verdicts, then the rollouts one at a time."""
    fates = Fates.of_verdicts(run_gates(run), run.iter_verdicts())
    return ((rollout, fates.of(rollout)) for rollout in run.iter_rollouts())


def category_order(gates: Sequence[str]) -> list[str]:
    """Failure categories in pipeline order: environment, then each configured gate's categories."""
    order = [ENVIRONMENT]
    for gate in gates:
        order += GATES[gate].categories if gate in GATES else (gate,)
    return order


def outcomes(rollouts: Iterable[Rollout], verdicts: Iterable[Verdict], gates: Sequence[str]) -> list[Acceptance]:
    """Each rollout's fate under `gates` (see the module docstring), in the rollouts' order."""
    fates = Fates.of_verdicts(gates, verdicts)
    return [fates.of(rollout) for rollout in rollouts]


class Fates:
    """What the verdicts say of each task, kept small (its first failed verdict in pipeline order and the gates that
    gave one), so that a run of any size is judged from one pass over its verdicts and one over its rollouts."""

    def __init__(self, gates: Sequence[str]):
        self.gates = list(gates)
        self._order = category_order(gates)
        self._bit = {gate: 1 << i for i, gate in enumerate([ENVIRONMENT, *self.gates])}  # the gates counted
        self._failed: dict[str, tuple[int, str, tuple[str, ...]]] = {}  # task -> (rank, category, reasons)
        self._gave: dict[str, int] = {}  # task -> the counted gates that gave a verdict, as bits

    @classmethod
    def of_verdicts(cls, gates: Sequence[str], verdicts: Iterable[Verdict]) -> Fates:
        fates = cls(gates)
        for verdict in verdicts:
            fates.add(verdict)
        return fates

    def add(self, verdict: Verdict) -> None:
        bit = self._bit.get(verdict.gate)
        if bit is None:
            return
        self._gave[verdict.task_id] = self._gave.get(verdict.task_id, 0) | bit
        if not verdict.passed:
            category = verdict.category or verdict.gate
            rank = _rank(self._order, category)
            known = self._failed.get(verdict.task_id)
            if known is None or rank < known[0]:  # the first of equal rank stays, as a stable sort keeps it
                self._failed[verdict.task_id] = (rank, category, verdict.reasons)

    def of(self, rollout: Rollout) -> Acceptance:
        failed = self._failed.get(rollout.task_id)
        if failed:
            return Acceptance(rollout.task_id, failed[1], failed[2])
        if rollout.status != RolloutStatus.done:
            return Acceptance(rollout.task_id, ENVIRONMENT, (rollout.failure or "the rollout did not finish",))
        gave = self._gave.get(rollout.task_id, 0)
        missing = [gate for gate in self.gates if not gave & self._bit[gate]]
        if missing:
            return Acceptance(rollout.task_id, UNDECIDED, (f"no verdict from: {', '.join(missing)}",))
        return Acceptance(rollout.task_id, None, ())


def _rank(order: list[str], category: str) -> int:
    return order.index(category) if category in order else len(order)
