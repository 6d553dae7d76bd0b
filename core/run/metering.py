"""The unit being worked on, as a context variable: what its model calls spend, and what made it.

A stage runs each unit of work (a task draft, a quality-gate verdict, a rollout, a filter
verdict, a deck's scores) inside `unit_scope(Unit(...))`. Every `ModelClient.chat` in that
context counts into the unit's meter and names its model; every template `core.prompts.render`
renders is named with its content hash; so a record is stamped with its usage and origin
(`stamped`) without a meter threaded through each call site. asyncio tasks inherit the
context, so calls made by tasks a unit gathers count too.

A unit may be capped (`rollouts.max_cost_usd`): once it has spent its cap, its next model
call is refused (`ModelError` kind "budget"). The run's cap (`core.run.ledger.SpendingCap`) with
`run.budget_in_flight=cancel` stops it at its next call with `UnitCancelled`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from contextvars import ContextVar
from typing import TYPE_CHECKING, Iterator, Optional, TypeVar

from core.records import ModelUse, Origin, Record
from core.run.usage import RoleUsage, UsageMeter

if TYPE_CHECKING:
    from core.run.ledger import SpendingCap

R = TypeVar("R", bound=Record)


class UnitCancelled(BaseException):
    """The run's spending cap was reached with run.budget_in_flight=cancel: the unit stops, uncommitted.

    A BaseException, so that code catching a model's errors (and turning them into records) lets it pass."""


class Unit:
    """One unit of work: its meter, the templates rendered and the models called while it ran."""

    def __init__(
        self,
        max_cost_usd: Optional[float] = None,
        cap: Optional[SpendingCap] = None,
        meter: Optional[UsageMeter] = None,
        parent: Optional[Unit] = None,
        key: Optional[str] = None,
    ):
        self.meter = meter or UsageMeter()
        self.key = key  # what pins its calls to one replica of a fleet (core.llm.fleet): a rollout's task id, a unit's id
        self.max_cost_usd = max_cost_usd
        self.cap = cap
        self.parent = parent
        self.templates: dict[str, str] = {}
        self.models: dict[str, ModelUse] = {}

    def part(self) -> Unit:
        """A part of this unit (one agent of a rollout) with its own origin, counting into the same meter."""
        return Unit(self.max_cost_usd, self.cap, self.meter, self, self.key)

    def refusal(self) -> Optional[str]:
        """Why no further model call may start: this unit's cap is spent (raises UnitCancelled for the run's cap)."""
        if self.cap is not None and self.cap.cancelling:
            raise UnitCancelled(self.cap.reason or "the run's spending cap is reached")
        if self.max_cost_usd is not None and self.meter.cost_usd >= self.max_cost_usd:
            return f"its cap rollouts.max_cost_usd={self.max_cost_usd:g} is spent (${self.meter.cost_usd:.4f})"
        return None

    def note_template(self, template: str, digest: str) -> None:
        unit: Optional[Unit] = self
        while unit is not None:
            unit.templates[template] = digest
            unit = unit.parent

    def note_model(self, role: str, use: ModelUse) -> None:
        unit: Optional[Unit] = self
        while unit is not None and unit.models.get(role) is not use:
            unit.models[role] = use
            unit = unit.parent

    def usage(self) -> dict[str, RoleUsage]:
        return self.meter.snapshot()

    def origin(self) -> Origin:
        return Origin(dict(sorted(self.templates.items())), dict(sorted(self.models.items())))


_current: ContextVar[Optional[Unit]] = ContextVar("deckforge_unit", default=None)


def current_unit() -> Optional[Unit]:
    return _current.get()


@contextlib.contextmanager
def unit_scope(unit: Unit) -> Iterator[Unit]:
    """Run the body (and the tasks it creates) as `unit`."""
    token = _current.set(unit)
    try:
        yield unit
    finally:
        _current.reset(token)


@contextlib.contextmanager
def part_scope() -> Iterator[Unit]:
    """A part of the current unit (a standalone unit outside any): its own origin, the same meter."""
    unit = current_unit()
    with unit_scope(unit.part() if unit is not None else Unit()) as part:
        yield part


def note_template(template: str, digest: str) -> None:
    unit = _current.get()
    if unit is not None:
        unit.note_template(template, digest)


def note_model(role: str, use: ModelUse) -> None:
    """Name the model (or the rule-based stand-in) playing `role` in the current unit."""
    unit = _current.get()
    if unit is not None:
        unit.note_model(role, use)


def stamped(record: R, unit: Unit) -> R:
    """`record` with the unit's usage and origin (added to whatever origin it carries already)."""
    changes: dict[str, object] = {"origin": getattr(record, "origin", Origin()) | unit.origin()}
    if any(f.name == "usage" for f in dataclasses.fields(record)):
        changes["usage"] = unit.usage()
    return dataclasses.replace(record, **changes)
