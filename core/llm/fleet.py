"""A role's replicas: which one serves each call, how many calls each may hold, which are up.

An endpoint (`llm.base_url`) is one server or a fleet of replicas of the same model. Every call of
a `core.llm.client.ModelClient` asks its `Fleet` for a slot on one replica and gives it back with the outcome:

- Routing (`llm.routing`). `sticky`: every call of a unit (`core.run.metering.Unit.key`: a rollout's task
  id, a judged unit's id) goes to the same replica, chosen by rendezvous hashing of the key over the
  replicas that are up: stable across processes and resumes, and when a replica leaves only its units
  move. An agent's next prompt is its last one plus a little, so the replica that served the last
  turn holds it in its prefix cache. Hashing alone can pin 4 of 6 units to one of two replicas, so the load
  is bounded (consistent hashing with bounded loads, Mirrokni, Thorup and Zadimoghaddam, 2018): a replica
  takes a call only while its calls in flight and waiting, this one included, stay within
  `ceil(llm.routing_load_bound x their mean over the replicas up)` (the ceiling always leaves one; a unit's
  first call, with no cache to keep, within the mean's ceiling).
  A unit past it goes to the next replica of its order that fits and stays there; its first move off a
  replica that served it is counted (`moved_in`) and logged. `round_robin`: each call the next replica.
- Admission. Each replica has a limit on calls in flight (`core.llm.replica_limit.Limit`), shared by every client of the
  process and, in a Ray run, by every rollout worker (`pipeline.fleet_admission` hosts one
  `FleetState` for all of them). It starts at `initial_concurrency`, doubles each round of
  successes until the first refusal (HTTP 429, 503, 529: a rate limit, vLLM's full queue, an
  overloaded gateway), then cuts to 0.8x what was in flight and grows by one per round, slowly near
  the level that was refused. A Retry-After pauses the replica. With `llm.admission=metrics` the
  limit also follows the replica's own gauges (`/metrics`: waiting requests, KV-cache use),
  holding `target_queue` requests waiting.
- Health. A replica that refuses connections, fails three calls in a row, or refuses ten in a row at
  a limit of one is taken out: its units route elsewhere (their next turn pays one full prefill)
  and it is probed every `probe_interval_s` (any HTTP answer below 500 brings it back). The last
  replica up of an endpoint stays in (there is nowhere else to go): the client's retries and
  backoff deal with it, as with a single server.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import math
import os
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Coroutine, Optional

import aiohttp

from core.config import AdmissionMode, ConfigError, LLMConfig, Routing, replica_urls
from core.llm.replica_limit import KV_USAGE, WAITING, CallOutcome, Grant, Limit, Policy, first, gauges, metrics_url
from core.protocols import Admission
from core.run.metering import current_unit

log = logging.getLogger(__name__)

FAILS_TO_DOWN = 3  # failed calls in a row that take a replica out
REFUSALS_TO_DOWN = 10  # refusals in a row, at a limit of one, that take a replica out
METRICS_INTERVAL_S = 0.5  # admission=metrics: how often each replica's gauges are read
UNITS_REMEMBERED = 100_000  # sticky units whose replica is remembered (the least recent forgotten first)


class NoReplicaUp(aiohttp.ClientConnectionError):
    """Every replica of the endpoint is out; a connection error to the client (retried with backoff)."""


@dataclass
class _Waiter:
    ticket: str
    urls: tuple[str, ...]
    key: Optional[str]
    routing: Routing
    load_bound: float
    future: asyncio.Future[Grant]


@dataclass
class Replica:
    url: str
    policy: Policy
    limit: Limit
    in_flight: int = 0
    up: bool = True
    paused_until: float = 0.0
    fails_in_row: int = 0
    refusals_in_row: int = 0
    granted: int = 0  # calls granted so far (their sequence numbers)
    peak_in_flight: int = 0
    refusals: int = 0
    units: int = 0  # sticky units whose last call it served
    moved_in: int = 0  # units that moved to it on their first move past the load bound
    waiters: deque[_Waiter] = field(default_factory=deque)
    fleets: set[tuple[str, ...]] = field(default_factory=set)  # the endpoints (replica lists) it serves in
    wake: Optional[asyncio.TimerHandle] = None  # the dispatch at the end of a pause (Retry-After)

    def has_room(self, now: float) -> bool:
        return self.up and now >= self.paused_until and self.in_flight < self.limit.slots

    @property
    def load(self) -> int:
        """Calls it holds: in flight and waiting for a slot."""
        return self.in_flight + len(self.waiters)


@dataclass
class _Placement:
    url: str = ""  # the replica its last call went to ("": none yet)
    # (its first choice then, where it went) after a move past the load bound: it stays there while that first
    # choice is still its first choice among the replicas up and the other is up (a replica back takes back its own)
    moved: Optional[tuple[str, str]] = None
    counted: bool = False  # its move off a replica that had served it was counted (once per unit)


def rendezvous_order(key: str, urls: list[str]) -> list[str]:
    """`urls` in `key`'s order of preference: by the hash of (key, url), the same in every process."""
    return sorted(urls, key=lambda url: hashlib.blake2b(f"{key}\x00{url}".encode(), digest_size=8).digest(), reverse=True)


def rendezvous(key: str, urls: list[str]) -> str:
    """The replica `key` is pinned to among `urls`."""
    return rendezvous_order(key, urls)[0]


class FleetState:
    """The shared view of every replica a process (or, hosted by an actor, a Ray cluster) calls: each one's limit,
    calls in flight, waiting calls and health. All its methods run on one event loop."""

    def __init__(self) -> None:
        self.replicas: dict[str, Replica] = {}
        self._tickets: dict[str, tuple[Replica, int]] = {}  # granted: ticket -> (replica, sequence number)
        self._waiting: dict[str, _Waiter] = {}
        self._rotation: dict[tuple[str, ...], itertools.count[int]] = {}
        self._placements: OrderedDict[str, _Placement] = OrderedDict()  # sticky units, the most recent last
        self._watchers: dict[str, asyncio.Task[None]] = {}  # probes of replicas taken out, readers of /metrics

    # ------------------------------------------------------------ calls

    async def acquire(self, urls: tuple[str, ...], policy: Policy, key: Optional[str], routing: Routing, ticket: str) -> Grant:
        """A slot on the replica this call goes to; waits while that replica is full. NoReplicaUp when all are out."""
        for url in urls:
            self._register(url, urls, policy)
        replica = self._route(urls, key, routing, policy.load_bound)
        if replica.has_room(time.monotonic()) and not replica.waiters:
            return self._grant(replica, ticket)
        waiter = _Waiter(ticket, urls, key, routing, policy.load_bound, asyncio.get_running_loop().create_future())
        replica.waiters.append(waiter)
        self._waiting[ticket] = waiter
        self._dispatch(replica)  # a paused replica: wake its waiters when the pause ends
        try:
            return await waiter.future
        except asyncio.CancelledError:
            self.release(ticket, CallOutcome.neutral)
            raise

    def release(self, ticket: str, outcome: CallOutcome, retry_after_s: Optional[float] = None) -> None:
        """The call holding `ticket` ended (or gave up waiting): free its slot and learn from how it ended."""
        waiter = self._waiting.pop(ticket, None)
        if waiter is not None:  # it gave up while waiting
            for replica in self.replicas.values():
                if waiter in replica.waiters:
                    replica.waiters.remove(waiter)
            return
        held = self._tickets.pop(ticket, None)
        if held is None:
            return
        replica, seq = held
        replica.in_flight -= 1
        self._learn(replica, seq, CallOutcome(outcome), retry_after_s)
        self._dispatch(replica)

    def forget(self, holder: str) -> None:
        """Free every slot and wait of the tickets of `holder` (a worker that died with calls in flight)."""
        for ticket in [t for t in [*self._tickets, *self._waiting] if t.startswith(f"{holder}/")]:
            self.release(ticket, CallOutcome.neutral)

    def snapshot(self) -> dict[str, dict[str, object]]:
        """Each replica's state, for logs and benchmarks."""
        return {
            url: {
                "up": r.up,
                "limit": round(r.limit.value, 2),
                "in_flight": r.in_flight,
                "waiting": len(r.waiters),
                "peak_in_flight": r.peak_in_flight,
                "granted": r.granted,
                "refusals": r.refusals,
                "units": r.units,
                "moved_in": r.moved_in,
            }
            for url, r in self.replicas.items()
        }

    # ------------------------------------------------------------ routing and slots

    def _register(self, url: str, urls: tuple[str, ...], policy: Policy) -> None:
        replica = self.replicas.get(url)
        if replica is None:
            replica = self.replicas[url] = Replica(url, policy, self._limit(policy))
            if policy.admission is AdmissionMode.metrics:
                self._watch(url, self._follow_metrics(url))
        elif policy.maximum > replica.limit.maximum:  # two roles on one server: the larger maximum
            replica.limit.maximum = policy.maximum
        replica.fleets.add(urls)

    @staticmethod
    def _limit(policy: Policy) -> Limit:
        return Limit(policy.maximum, policy.initial, policy.admission is AdmissionMode.metrics)

    def _route(self, urls: tuple[str, ...], key: Optional[str], routing: Routing, load_bound: float) -> Replica:
        up = [u for u in urls if self.replicas[u].up]
        if not up:
            raise NoReplicaUp(f"every replica is out: {', '.join(urls)} (probed back every few seconds)")
        if key is not None and routing is Routing.sticky:
            return self._sticky(key, up, load_bound)
        if routing is Routing.round_robin:
            turn = next(self._rotation.setdefault(urls, itertools.count()))
            return self.replicas[up[turn % len(up)]]
        return min((self.replicas[u] for u in up), key=lambda r: r.load / r.limit.value)

    def _sticky(self, key: str, up: list[str], load_bound: float) -> Replica:
        """The unit's replica: its first choice among those up (or the one it moved to), unless that one is past
        the load bound; then the next of its order within it, where it stays."""
        order = rendezvous_order(key, up)
        placement = self._placements.pop(key, None) or _Placement()
        moved = placement.moved
        url = moved[1] if moved is not None and moved[0] == order[0] and moved[1] in up else order[0]
        bound = load_bound if placement.url or not load_bound else 1.0  # a first call has no cache to keep: even
        if bound and self.replicas[url].load >= (most := self._most_calls(up, bound)):
            target = next((u for u in order if u != url and self.replicas[u].load < most), url)
            if target != url and placement.url and not placement.counted:  # a first call loses no cache: no move
                placement.counted = True
                self.replicas[target].moved_in += 1
                why = f"{self.replicas[url].load} calls there, past {load_bound:g} x the fleet's mean"
                log.info("unit %s moved from %s to %s: %s", key, url, target, why)
            url = target
        placement.moved = (order[0], url) if url != order[0] else None
        if placement.url != url:  # counted where its calls go now
            self.replicas[url].units += 1
            if placement.url:
                self.replicas[placement.url].units -= 1
            placement.url = url
        self._placements[key] = placement
        if len(self._placements) > UNITS_REMEMBERED:
            self._placements.popitem(last=False)
        return self.replicas[url]

    def _most_calls(self, up: list[str], load_bound: float) -> int:
        """The calls a replica may hold, one more included: `load_bound` x the mean load of those up, rounded up."""
        return math.ceil(load_bound * (sum(self.replicas[u].load for u in up) + 1) / len(up))

    def _grant(self, replica: Replica, ticket: str) -> Grant:
        replica.in_flight += 1
        replica.peak_in_flight = max(replica.peak_in_flight, replica.in_flight)
        seq, replica.granted = replica.granted, replica.granted + 1
        self._tickets[ticket] = (replica, seq)
        return Grant(replica.url, seq, ticket)

    def _dispatch(self, replica: Replica) -> None:
        """Grant the replica's waiting calls, first come first served, while it has room."""
        now = time.monotonic()
        while replica.waiters and replica.has_room(now):
            waiter = replica.waiters.popleft()
            del self._waiting[waiter.ticket]
            if not waiter.future.done():
                waiter.future.set_result(self._grant(replica, waiter.ticket))
        if replica.waiters and replica.up and now < replica.paused_until and replica.wake is None:
            replica.wake = asyncio.get_running_loop().call_later(replica.paused_until - now, self._wake, replica)

    def _wake(self, replica: Replica) -> None:
        replica.wake = None
        self._dispatch(replica)

    def _reroute(self, replica: Replica) -> None:
        """A replica went out: its waiting calls go where their keys route now (or fail if none is up)."""
        waiters, replica.waiters = list(replica.waiters), deque()
        for waiter in waiters:
            if waiter.future.done():  # its call was cancelled meanwhile
                self._waiting.pop(waiter.ticket, None)
                continue
            try:
                target = self._route(waiter.urls, waiter.key, waiter.routing, waiter.load_bound)
            except NoReplicaUp as exc:
                del self._waiting[waiter.ticket]
                waiter.future.set_exception(exc)
                continue
            target.waiters.append(waiter)
            self._dispatch(target)

    # ------------------------------------------------------------ learning

    def _learn(self, replica: Replica, seq: int, outcome: CallOutcome, retry_after_s: Optional[float]) -> None:
        if outcome is CallOutcome.ok:
            replica.fails_in_row = replica.refusals_in_row = 0
            replica.limit.succeeded()
        elif outcome is CallOutcome.refused:
            replica.refusals += 1
            replica.refusals_in_row += 1
            if replica.limit.refused(seq, replica.in_flight + 1, replica.granted):
                log.info("replica %s refused: limit now %d", replica.url, replica.limit.slots)
            if retry_after_s:
                replica.paused_until = max(
                    replica.paused_until, time.monotonic() + min(retry_after_s, replica.policy.max_pause_s)
                )
            if replica.refusals_in_row >= REFUSALS_TO_DOWN and replica.limit.slots <= 1:
                self._take_out(replica, f"{replica.refusals_in_row} refusals in a row")
        elif outcome is CallOutcome.failed:
            replica.fails_in_row += 1
            if replica.fails_in_row >= FAILS_TO_DOWN:
                self._take_out(replica, f"{replica.fails_in_row} failed calls in a row")
        elif outcome is CallOutcome.unreachable:
            self._take_out(replica, "it refused the connection")

    def _take_out(self, replica: Replica, why: str) -> None:
        others_up = all(any(self.replicas[u].up for u in fleet if u != replica.url) for fleet in replica.fleets)
        if not replica.up or not others_up:
            return
        replica.up = False
        log.warning(
            "replica %s taken out (%s): its calls go to the others; probed every %gs",
            replica.url,
            why,
            replica.policy.probe_interval_s,
        )
        self._reroute(replica)
        self._watch(f"probe {replica.url}", self._probe(replica))

    def _watch(self, name: str, job: Coroutine[Any, Any, None]) -> None:
        if name not in self._watchers or self._watchers[name].done():
            self._watchers[name] = asyncio.get_running_loop().create_task(job)
        else:
            job.close()  # one watcher per name: this one is not needed

    async def _probe(self, replica: Replica) -> None:
        """Bring the replica back once it answers HTTP below 500 (a 401 is a server that is up)."""
        async with _watcher_session() as http:
            while not replica.up:
                await asyncio.sleep(replica.policy.probe_interval_s)
                try:
                    async with http.get(replica.url.rstrip("/") + "/models") as response:
                        if response.status >= 500:
                            continue
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    continue
                break
            replica.up, replica.fails_in_row, replica.refusals_in_row = True, 0, 0
            replica.limit = self._limit(replica.policy)  # from a small start again
            log.warning("replica %s is back", replica.url)

    async def _follow_metrics(self, url: str) -> None:
        """admission=metrics: move the replica's limit with its gauges; a server without them keeps the refusal rule."""
        replica = self.replicas[url]
        async with _watcher_session() as http:
            while True:
                await asyncio.sleep(METRICS_INTERVAL_S)
                if not replica.up:
                    continue
                try:
                    async with http.get(metrics_url(url)) as response:
                        text = await response.text() if response.status == 200 else ""
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    continue
                found = gauges(text)
                waiting = first(found, WAITING)
                if waiting is None:
                    log.warning("replica %s: no queue gauge at %s; admission follows refusals only", url, metrics_url(url))
                    replica.limit.follows_metrics = False
                    return
                replica.limit.follow(waiting, first(found, KV_USAGE), replica.policy.target_queue)
                self._dispatch(replica)


def _watcher_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5.0))


_shared: Optional[Admission] = None
_local: dict[asyncio.AbstractEventLoop, FleetState] = {}
HOLDER = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"  # this process, in ticket names
_tickets = itertools.count()  # one count for every client of the process: a ticket names one call


def share(admission: Optional[Admission], holder: Optional[str] = None) -> None:
    """Make every client of this process take its slots from `admission` (a Ray worker: the cluster's); None: its own."""
    global _shared, HOLDER
    _shared = admission
    if holder is not None:
        HOLDER = holder


def admission() -> Admission:
    """The admission of this process: the shared one, else a FleetState of the running event loop."""
    if _shared is not None:
        return _shared
    loop = asyncio.get_running_loop()
    state = _local.get(loop)
    if state is None:
        for closed in [other for other in _local if other.is_closed()]:
            del _local[closed]
        state = _local[loop] = FleetState()
    return state


def read_urls_file(path: Path) -> tuple[str, ...]:
    """The base URLs of `llm.base_urls_file`: one per line; blank lines and `#` comments skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"llm.base_urls_file={path}: cannot read it ({exc.strerror})") from exc
    urls = tuple(line.split("#", 1)[0].strip() for line in lines)
    urls = tuple(u for u in urls if u)
    if not urls:
        raise ConfigError(f"llm.base_urls_file={path}: lists no base URL")
    return urls


class Fleet:
    """One client's view of its endpoint's replicas: which they are (the config's list, or a file reread when it
    changes), the routing, and the slot of each call."""

    FILE_CHECK_S = 2.0

    def __init__(self, cfg: LLMConfig):
        self.policy = Policy.of(cfg)
        self.routing = Routing(cfg.routing)
        self.file = Path(cfg.base_urls_file).expanduser() if cfg.base_urls_file else None
        self._urls = read_urls_file(self.file) if self.file else replica_urls(cfg)
        self._file_seen = (self.file.stat().st_mtime_ns, time.monotonic()) if self.file else (0, 0.0)

    @property
    def urls(self) -> tuple[str, ...]:
        """The replicas, the file reread (at most every FILE_CHECK_S) when it changed."""
        if self.file is not None and time.monotonic() - self._file_seen[1] >= self.FILE_CHECK_S:
            try:
                mtime = self.file.stat().st_mtime_ns
                if mtime != self._file_seen[0]:
                    self._urls = read_urls_file(self.file)
                    log.info("replicas from %s: %s", self.file, ", ".join(self._urls))
            except (OSError, ConfigError) as exc:
                log.warning("keeping the replicas known so far: %s", exc)
                mtime = self._file_seen[0]
            self._file_seen = (mtime, time.monotonic())
        return self._urls

    async def acquire(self) -> Grant:
        """A slot for one call, on the replica the current unit is pinned to (or the routing's next)."""
        unit = current_unit()
        ticket = f"{HOLDER}/{next(_tickets)}"
        return await admission().acquire(self.urls, self.policy, unit.key if unit else None, self.routing, ticket)

    def release(self, grant: Grant, outcome: CallOutcome, retry_after_s: Optional[float] = None) -> None:
        admission().release(grant.ticket, outcome, retry_after_s)
