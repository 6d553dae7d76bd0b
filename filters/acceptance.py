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

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

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


def judged(run: RunReader) -> list[Acceptance]:
    """Each of the run's rollouts' fate under its own gates (before the filters ran: every finished one undecided)."""
    return outcomes(run.rollouts(), run.verdicts() or [], run_gates(run))


def category_order(gates: Sequence[str]) -> list[str]:
    """Failure categories in pipeline order: environment, then each configured gate's categories."""
    order = [ENVIRONMENT]
    for gate in gates:
        order += GATES[gate].categories if gate in GATES else (gate,)
    return order


def outcomes(rollouts: Sequence[Rollout], verdicts: Sequence[Verdict], gates: Sequence[str]) -> list[Acceptance]:
    """Each rollout's fate under `gates` (see the module docstring), in the rollouts' order."""
    by_task: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_task[v.task_id].append(v)
    order = category_order(gates)
    counted = {ENVIRONMENT, *gates}
    found = []
    for rollout in rollouts:
        mine = [v for v in by_task[rollout.task_id] if v.gate in counted]
        failed = sorted((v for v in mine if not v.passed), key=lambda v: _rank(order, v.category or v.gate))
        if failed:
            found.append(Acceptance(rollout.task_id, failed[0].category or failed[0].gate, failed[0].reasons))
        elif rollout.status != RolloutStatus.done:
            found.append(Acceptance(rollout.task_id, ENVIRONMENT, (rollout.failure or "the rollout did not finish",)))
        elif set(gates) - {v.gate for v in mine}:
            missing = sorted(set(gates) - {v.gate for v in mine}, key=list(gates).index)
            found.append(Acceptance(rollout.task_id, UNDECIDED, (f"no verdict from: {', '.join(missing)}",)))
        else:
            found.append(Acceptance(rollout.task_id, None, ()))
    return found


def _rank(order: list[str], category: str) -> int:
    return order.index(category) if category in order else len(order)
