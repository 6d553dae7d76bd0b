"""Model usage by role: calls, retries, failures, tokens, cost and the calls' wall time.

`RoleUsage` is the frozen total a record stores (a unit's usage, a stage's, a run's);
`UsageMeter` accumulates it while calls happen, from any thread. A cost is "unknown",
not zero, while any call of the role had no known price (`unpriced_calls`). Each role's
calls are also counted by the replica that served them (`ReplicaUsage`, core.llm.fleet).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Iterable, Mapping, Optional

COUNTERS = (
    "calls",
    "retries",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
    "unpriced_calls",
    "latency_s",
    "estimated_calls",
)


@dataclass(frozen=True)
class ReplicaUsage:
    """What one replica (a server of the role's fleet, by base URL) did for a role: its answers and failed attempts."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens it served from its prefix cache (usage.prompt_tokens_details)
    errors: int = 0  # attempts it failed or refused (each retry counts)

    def __add__(self, other: ReplicaUsage) -> ReplicaUsage:
        return ReplicaUsage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


@dataclass(frozen=True)
class RoleUsage:
    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0  # as the server counted them (estimated for `estimated_calls`)
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the server served from its prompt cache
    cost_usd: float = 0.0  # of the calls whose price is known
    unpriced_calls: int = 0  # calls of a model whose price is unknown: the cost is then unknown
    latency_s: float = 0.0  # the calls' wall time, summed
    estimated_calls: int = 0  # calls whose usage the server did not report
    failures: dict[str, int] = field(default_factory=dict)  # calls given up on, by ModelError kind
    replicas: dict[str, ReplicaUsage] = field(default_factory=dict)  # by the base URL that served (or failed) them

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> Optional[float]:
        """The cost in US dollars; None (unknown) when any call had no known price."""
        return None if self.unpriced_calls else self.cost_usd

    def __add__(self, other: RoleUsage) -> RoleUsage:
        failures = dict(self.failures)
        for kind, n in other.failures.items():
            failures[kind] = failures.get(kind, 0) + n
        replicas = dict(self.replicas)
        for url, usage in other.replicas.items():
            replicas[url] = replicas[url] + usage if url in replicas else usage
        return RoleUsage(**{k: getattr(self, k) + getattr(other, k) for k in COUNTERS}, failures=failures, replicas=replicas)

    def to_json(self) -> dict[str, object]:
        """As stats/usage.json shows it: `cost_usd` null when unknown (the known part is `priced_cost_usd`)."""
        data: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["replicas"] = {url: asdict(usage) for url, usage in sorted(self.replicas.items())}
        data["cost_usd"], data["priced_cost_usd"] = self.cost, round(self.cost_usd, 6)
        data["latency_s"] = round(self.latency_s, 3)
        return data


def total(usage: Iterable[RoleUsage]) -> RoleUsage:
    return sum(usage, RoleUsage())


def merged(*parts: Mapping[str, RoleUsage]) -> dict[str, RoleUsage]:
    """Usage by role, summed over `parts`."""
    out: dict[str, RoleUsage] = {}
    for part in parts:
        for role, usage in part.items():
            out[role] = out[role] + usage if role in out else usage
    return out


class _Tally:
    """A role's running counters (mutable; `UsageMeter` guards it)."""

    __slots__ = (*COUNTERS, "failures", "replicas")
    calls: int  # the COUNTERS, each set to 0 by __init__
    retries: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    unpriced_calls: int
    latency_s: float
    estimated_calls: int

    def __init__(self) -> None:
        for name in COUNTERS:
            setattr(self, name, 0)
        self.failures: dict[str, int] = {}
        self.replicas: dict[str, ReplicaUsage] = {}

    def frozen(self) -> RoleUsage:
        return RoleUsage(**{k: getattr(self, k) for k in COUNTERS}, failures=dict(self.failures), replicas=dict(self.replicas))

    def add_to_replica(self, url: str, usage: ReplicaUsage) -> None:
        self.replicas[url] = self.replicas[url] + usage if url in self.replicas else usage


class UsageMeter:
    """Usage per role while it happens; safe to share between clients and threads."""

    def __init__(self) -> None:
        self._roles: dict[str, _Tally] = {}
        self._lock = threading.Lock()
        self.cost_usd = 0.0  # every role's known cost (read without the lock: a budget check tolerates a stale value)
        self.tokens = 0

    def _tally(self, role: str) -> _Tally:
        tally = self._roles.get(role)
        if tally is None:
            tally = self._roles[role] = _Tally()
        return tally

    def record_call(
        self,
        role: str,
        prompt: int,
        completion: int,
        cached: int,
        cost: Optional[float],
        latency_s: float,
        estimated: bool,
        replica: Optional[str] = None,
    ) -> None:
        """One answered call (by `replica`, where known); `cost` None when its price is unknown."""
        with self._lock:
            t = self._tally(role)
            if replica is not None:
                t.add_to_replica(replica, ReplicaUsage(1, prompt, cached))
            t.calls += 1
            t.prompt_tokens += prompt
            t.completion_tokens += completion
            t.cached_tokens += cached
            t.latency_s += latency_s
            t.estimated_calls += estimated
            if cost is None:
                t.unpriced_calls += 1
            else:
                t.cost_usd += cost
                self.cost_usd += cost
            self.tokens += prompt + completion

    def record_retry(self, role: str) -> None:
        with self._lock:
            self._tally(role).retries += 1

    def record_replica_error(self, role: str, replica: str) -> None:
        """An attempt `replica` failed or refused (retried or not)."""
        with self._lock:
            self._tally(role).add_to_replica(replica, ReplicaUsage(errors=1))

    def record_failure(self, role: str, kind: str) -> None:
        with self._lock:
            failures = self._tally(role).failures
            failures[kind] = failures.get(kind, 0) + 1

    def snapshot(self) -> dict[str, RoleUsage]:
        with self._lock:
            return {role: t.frozen() for role, t in self._roles.items()}

    def totals(self) -> RoleUsage:
        return total(self.snapshot().values())
