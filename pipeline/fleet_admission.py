"""One admission view of the fleet for every rollout worker of a Ray run (core/llm/fleet.py).

Each worker process would otherwise count its own calls in flight: 16 workers at
`llm.max_concurrency=64` can put 1,024 requests on one replica. The rollouts stage starts one
`FleetActor` (an async actor holding a `core.llm.fleet.FleetState`) before its workers, hands it to
each, and every model call of every worker takes its slot there and gives it back with its outcome.
A slot costs two actor calls per model call (benchmarks/README.md, "A fleet of model servers");
the release is not waited for.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Optional

import ray
from ray.exceptions import RayTaskError

from core.config import Routing
from core.llm.fleet import FleetState, NoReplicaUp
from core.llm.replica_limit import CallOutcome, Grant, Policy

MAX_CALLS_WAITING = 100_000  # every call waiting for a slot is one actor call in progress


@ray.remote(num_cpus=0, max_restarts=-1)
class FleetActor:
    """The cluster's FleetState. If it dies, Ray starts it again empty: the limits start small again."""

    def __init__(self) -> None:
        self.state = FleetState()

    async def acquire(self, urls: tuple[str, ...], policy: Policy, key: Optional[str], routing: Routing, ticket: str) -> Grant:
        return await self.state.acquire(urls, policy, key, routing, ticket)

    def release(self, ticket: str, outcome: CallOutcome, retry_after_s: Optional[float] = None) -> None:
        self.state.release(ticket, outcome, retry_after_s)

    def forget(self, holder: str) -> None:
        self.state.forget(holder)

    def snapshot(self) -> dict[str, dict[str, object]]:
        return self.state.snapshot()


def start_fleet_actor() -> tuple[Any, str]:
    """The run's actor and its name: workers look it up by name (an actor handle among a restartable actor's
    constructor arguments lives in the object store, and Ray warns that a restart could not find it)."""
    name = f"deckforge-fleet-{uuid.uuid4().hex[:12]}"
    # @ray.remote made it an ActorClass; mypy keeps a decorated class's own type
    return FleetActor.options(name=name, max_concurrency=MAX_CALLS_WAITING).remote(), name  # type: ignore[attr-defined]


def fleet_actor(name: str) -> Any:
    return ray.get_actor(name)


class RemoteAdmission:
    """A worker's side of the actor: a `core.llm.fleet.Admission`."""

    def __init__(self, actor: Any):
        self.actor = actor

    async def acquire(self, urls: tuple[str, ...], policy: Policy, key: Optional[str], routing: Routing, ticket: str) -> Grant:
        try:
            return await self.actor.acquire.remote(urls, policy, key, routing, ticket)
        except RayTaskError as exc:  # every replica is out: the client's connection error, retried with backoff
            if isinstance(exc.cause, NoReplicaUp):
                raise exc.cause from None
            raise
        except asyncio.CancelledError:  # given up while waiting (or just granted): the actor frees what it holds
            self.release(ticket, CallOutcome.neutral)
            raise

    def release(self, ticket: str, outcome: CallOutcome, retry_after_s: Optional[float] = None) -> None:
        self.actor.release.remote(ticket, outcome, retry_after_s)
