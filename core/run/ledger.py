"""The run's usage ledger, read from the run directory, and the run's spending cap.

Each finished unit carries its own usage (`units/<stage>/<id>.json`, field `usage`), published
once with the unit itself: a resumed run cannot count a finished unit twice, and what it plays
again counts again. An attempt that ended without a unit (a judge that gave no verdict, a unit
cancelled at the cap, a ghost whose twin published first) leaves its spending in
`usage/unfinished/<stage>/`. Calls cut short by a kill (SIGKILL) are in neither: nothing ran to
write them down.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Optional, TypeVar

import orjson

from core.cli import Stopped
from core.codec import RecordError, decode
from core.config import BudgetInFlight, RunConfig
from core.records import Record
from core.run.metering import Unit, UnitCancelled, stamped, unit_scope
from core.run.store import RunStore
from core.run.usage import RoleUsage, merged, total

R = TypeVar("R", bound=Record)

UNFINISHED = ("usage", "unfinished")
MARKERS = "stages"  # units/stages/ marks whole stages done: no usage of its own
ORDER = ("task_drafts", "task_gate", "rollouts", "verdicts", "eval_scores")  # the stages' units in pipeline order


def _in_order(folders: list[Path]) -> list[Path]:
    return sorted(folders, key=lambda p: (ORDER.index(p.name) if p.name in ORDER else len(ORDER), p.name))


@dataclass
class Ledger:
    stages: dict[str, dict[str, RoleUsage]] = field(default_factory=dict)  # finished units' usage: stage -> role -> usage
    units: dict[str, int] = field(default_factory=dict)  # finished units per stage
    unfinished: dict[str, dict[str, RoleUsage]] = field(default_factory=dict)  # attempts that left no unit

    def by_role(self) -> dict[str, RoleUsage]:
        return merged(*self.stages.values(), *self.unfinished.values())

    def total(self) -> RoleUsage:
        return total(self.by_role().values())

    def to_json(self) -> dict[str, Any]:
        """stats/usage.json's ledger part: by stage and role, the attempts that left no unit, by role, the total."""

        def roles(usage: Mapping[str, RoleUsage]) -> dict[str, Any]:
            return {role: u.to_json() for role, u in sorted(usage.items())}

        return {
            "stages": {
                stage: {"units": self.units.get(stage, 0), "roles": roles(usage), "total": total(usage.values()).to_json()}
                for stage, usage in self.stages.items()
            },
            "unfinished": {stage: roles(usage) for stage, usage in self.unfinished.items()},
            "roles": roles(self.by_role()),
            "total": self.total().to_json(),
        }


def usage_of(data: Mapping[str, Any], where: Path) -> dict[str, RoleUsage]:
    """The `usage` of a unit's JSON (none in records older than schema version 2)."""
    try:
        return {role: decode(RoleUsage, value) for role, value in (data.get("usage") or {}).items()}
    except (RecordError, TypeError) as exc:
        raise RecordError(f"{where}: unreadable usage: {exc}") from exc


def _read(text: str | bytes, where: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = orjson.loads(text)  # a unit's JSON is an object
        return data
    except orjson.JSONDecodeError as exc:
        raise RecordError(f"{where}: not JSON ({exc})") from exc


def read_ledger(root: Path) -> Ledger:
    ledger = Ledger()
    store = RunStore(root)
    for folder in _in_order([p for p in (root / "units").glob("*") if p.is_dir() and p.name != MARKERS]):
        usage: dict[str, RoleUsage] = {}
        units = 0
        for _, text, where in store.iter_json(folder.name):  # summed as read: a unit's usage is let go at once
            usage = merged(usage, usage_of(_read(text, where), where))
            units += 1
        ledger.units[folder.name] = units
        ledger.stages[folder.name] = usage
    for folder in _in_order([p for p in root.joinpath(*UNFINISHED).glob("*") if p.is_dir()]):
        ledger.unfinished[folder.name] = merged(
            *(usage_of(_read(p.read_bytes(), p), p) for p in folder.glob("*.json") if not p.name.startswith("."))
        )
    return ledger


class BudgetExhausted(Stopped, RuntimeError):
    """The run's spending cap stopped a stage; the message is the one line the user sees."""


class SpendingCap:
    """`run.max_cost_usd` / `run.max_tokens` over the ledger so far plus what this process spends.

    A stage asks `admit()` before each unit starts; units of this process are followed live
    (`opened`/`closed`), units finished elsewhere (a Ray worker's rollouts) are `add`ed when their
    records arrive. Once reached, no unit is admitted; with `budget_in_flight=cancel` the units in
    flight stop at their next model call (`core.run.metering.UnitCancelled`)."""

    def __init__(self, run: RunConfig, spent: RoleUsage):
        self.max_cost_usd, self.max_tokens = run.max_cost_usd, run.max_tokens
        self.cancel = BudgetInFlight(run.budget_in_flight) is BudgetInFlight.cancel
        self._cost, self._tokens = spent.cost_usd, spent.tokens
        self._live: set[Unit] = set()
        self._lock = threading.Lock()
        self.held_back = 0  # units not started (or cancelled) because of the cap
        self.reason: Optional[str] = None

    def spent(self) -> tuple[float, int]:
        with self._lock:
            live = list(self._live)
        return self._cost + sum(u.meter.cost_usd for u in live), self._tokens + sum(u.meter.tokens for u in live)

    def reached(self) -> Optional[str]:
        """What was spent against which cap, once a cap is reached; else None."""
        cost, tokens = self.spent()
        if self.max_cost_usd is not None and cost >= self.max_cost_usd:
            self.reason = f"run.max_cost_usd={self.max_cost_usd:g} reached: ${cost:.4f} spent"
        elif self.max_tokens is not None and tokens >= self.max_tokens:
            self.reason = f"run.max_tokens={self.max_tokens} reached: {tokens:,} tokens spent"
        return self.reason

    @property
    def cancelling(self) -> bool:
        """Whether units in flight must stop now (run.budget_in_flight=cancel and the cap reached)."""
        return self.cancel and self.reached() is not None

    def admit(self) -> bool:
        """May a new unit start? Counts the ones held back."""
        if self.reached() is None:
            return True
        self.hold_back()
        return False

    def hold_back(self) -> None:
        with self._lock:
            self.held_back += 1

    def opened(self, unit: Unit) -> None:
        with self._lock:
            self._live.add(unit)

    def closed(self, unit: Unit) -> None:
        """The unit ended (committed or not): what it spent stays spent."""
        with self._lock:
            self._live.discard(unit)
            self._cost += unit.meter.cost_usd
            self._tokens += unit.meter.tokens

    def add(self, usage: Mapping[str, RoleUsage]) -> None:
        spent = total(usage.values())
        with self._lock:
            self._cost += spent.cost_usd
            self._tokens += spent.tokens

    def stop(self, stage: str) -> BudgetExhausted:
        """The one line a stage stops with once units were held back."""
        return BudgetExhausted(
            f"stage {stage} stopped: {self.reason or self.reached()} (the whole run so far); {self.held_back} unit(s) not "
            "finished. Raise the cap and rerun the same command to finish the rest: finished units are kept and not played again."
        )


def spending_cap(run: RunConfig, root: Path) -> Optional[SpendingCap]:
    """The run's cap, counting the ledger on disk so far; None when no cap is set."""
    if run.max_cost_usd is None and run.max_tokens is None:
        return None
    return SpendingCap(run, read_ledger(root).total())


async def play_unit(
    store: RunStore, stage: str, unit_id: str, make: Callable[[], Awaitable[Optional[R]]], cap: Optional[SpendingCap] = None
) -> Optional[R]:
    """Run `make` as one unit (core.run.metering) and publish its record stamped with its usage and origin.

    None, and no unit: the cap held it back or stopped it (`cap.held_back` counts it), or `make`
    returned None (a judge that gave no verdict). What it spent is kept as unfinished then, and
    when it raises."""
    if cap is not None and not cap.admit():
        return None
    unit = Unit(cap=cap, key=f"{stage}/{unit_id}")  # its calls stick to one replica of a fleet
    if cap is not None:
        cap.opened(unit)
    try:
        with unit_scope(unit):
            record = await make()
    except UnitCancelled:
        assert cap is not None
        cap.hold_back()
        record = None
        why = "stopped at the run's spending cap"
    except BaseException:
        store.spent_unfinished(stage, unit_id, unit.usage(), "interrupted")
        raise
    else:
        why = "no result"
    finally:
        if cap is not None:
            cap.closed(unit)
    if record is None:
        store.spent_unfinished(stage, unit_id, unit.usage(), why)
        return None
    record = stamped(record, unit)
    await asyncio.to_thread(store.commit, stage, unit_id, record)  # the fsyncs of concurrent units overlap
    return record
