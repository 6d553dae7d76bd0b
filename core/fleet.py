"""A role's replicas: which one serves each call, how many calls each may hold, which are up.

An endpoint (`llm.base_url`) is one server or a fleet of replicas of the same model. Every call of
a `core.llm.ModelClient` asks its `Fleet` for a slot on one replica and gives it back with the outcome:

- Routing (`llm.routing`). `sticky`: every call of a unit (`core.metering.Unit.key`: a rollout's task
  id, a judged unit's id) goes to the same replica, chosen by rendezvous hashing of the key over the
  replicas that are up: stable across processes and resumes, and when a replica leaves only its units
  move. An agent's next prompt is its last one plus a little, so the replica that served the last
  turn holds it in its prefix cache. `round_robin`: each call the next replica, as a plain balancer.
- Admission. Each replica has a limit on calls in flight (`Limit`), shared by every client of the
  process and, in a Ray run, by every rollout worker (`pipeline.fleet_admission` hosts one
  `FleetState` for all of them). It starts at `initial_concurrency`, doubles each round of
  successes until the first refusal (HTTP 429, 503, 529: a rate limit, vLLM's full queue, an
  overloaded gateway), then cuts to 0.8x what was in flight and grows by one per round, slowly near
  the level that was refused. A Retry-After pauses the replica. With `llm.admission=metrics` the
  limit also follows the replica's own gauges (`/metrics`: waiting requests, KV-cache use),
  holding `target_queue` requests waiting.
- Health. A replica that refuses connections, fails three calls in a row, or refuses ten in a row at
  a limit of one is taken out: its units route elsewhere (their next turn pays one full prefill)
  and it is probed every `probe_interval_s` (any HTTP answer below 500 brings it back).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import os
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Optional, Protocol

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from core.config import AdmissionMode, ConfigError, LLMConfig, Routing, replica_urls
from core.metering import current_unit

log = logging.getLogger(__name__)

REFUSAL_STATUSES = frozenset({429, 503, 529})  # rate limited; vLLM's admission (a full queue); an overloaded gateway
CUT = 0.8  # a refused limit goes to this share of the calls then in flight
PLATEAU = 16  # near the level last refused, the limit grows this many times slower: ~one refusal per 16 rounds
FAILS_TO_DOWN = 3  # failed calls in a row that take a replica out
REFUSALS_TO_DOWN = 10  # refusals in a row, at a limit of one, that take a replica out
METRICS_INTERVAL_S = 0.5
KV_FULL = 0.95  # admission=metrics: above this KV-cache use the limit does not grow (vLLM would preempt)
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs")
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage")


class NoReplicaUp(aiohttp.ClientConnectionError):
    """Every replica of the endpoint is out; a connection error to the client (retried with backoff)."""


class Outcome(str, Enum):
    """How a call ended, for its replica's limit and health."""

    ok = "ok"
    refused = "refused"  # 429, 503, 529
    failed = "failed"  # a timeout, a 5xx, a connection cut
    unreachable = "unreachable"  # the connection was refused: the server is gone
    neutral = "neutral"  # the request's own fault (a 4xx) or the caller gave up: says nothing of the replica


@dataclass(frozen=True)
class Policy:
    """How a replica is admitted, from the endpoint's config (the first client to register a replica sets it)."""

    maximum: int
    initial: int
    admission: AdmissionMode = AdmissionMode.refusals
    target_queue: int = 2
    probe_interval_s: float = 5.0
    max_pause_s: float = 60.0

    @classmethod
    def of(cls, cfg: LLMConfig) -> Policy:
        return cls(
            cfg.max_concurrency,
            min(cfg.initial_concurrency, cfg.max_concurrency),
            AdmissionMode(cfg.admission),
            cfg.target_queue,
            cfg.probe_interval_s,
            cfg.backoff_max_s,
        )


class Limit:
    """Calls one replica may hold: slow start, then a gentle cut per burst of refusals and additive growth; with
    `follows_metrics`, after slow start, moved by the replica's queue gauges instead of by successes."""

    def __init__(self, maximum: int, initial: int, follows_metrics: bool = False):
        self.maximum = maximum
        self.value = float(max(1, min(initial, maximum)))
        self.ceiling: Optional[int] = None  # calls in flight at the last refusal (or overfull queue); None: slow start
        self.cut_at = 0  # calls granted before this sequence number were sent before the last cut
        self.follows_metrics = follows_metrics

    def succeeded(self) -> None:
        if self.ceiling is None:
            step = 1.0  # one per success: doubles each round
        elif self.follows_metrics:
            return
        elif self.value < self.ceiling - 1:
            step = 1.0 / self.value  # one per round
        else:
            step = 1.0 / (PLATEAU * self.value)
        self.value = min(float(self.maximum), self.value + step)

    def refused(self, seq: int, in_flight: int, next_seq: int) -> bool:
        """Cut once per burst: a refusal of a call sent before the last cut is the same overload. True if cut."""
        if seq < self.cut_at:
            return False
        self.ceiling = in_flight
        self.value = max(1.0, min(self.value, in_flight) * CUT)
        self.cut_at = next_seq
        return True

    def follow(self, waiting: float, kv_usage: Optional[float], target: int) -> None:
        """admission=metrics: half the gap between the replica's waiting requests and `target` per reading;
        slow start ends when the queue first passes it, and the limit never grows while the KV cache is full."""
        full = kv_usage is not None and kv_usage >= KV_FULL
        if self.ceiling is None:
            if waiting <= target and not full:
                return
            self.ceiling = int(self.value)
        step = (target - waiting) / 2
        if step > 0 and full:
            return
        self.value = min(float(self.maximum), max(1.0, self.value + step))

    @property
    def slots(self) -> int:
        return int(self.value)


@dataclass
class _Waiter:
    ticket: str
    urls: tuple[str, ...]
    key: Optional[str]
    routing: Routing
    future: asyncio.Future


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
    waiters: deque[_Waiter] = field(default_factory=deque)
    wake: Optional[asyncio.TimerHandle] = None  # the dispatch at the end of a pause (Retry-After)

    def has_room(self, now: float) -> bool:
        return self.up and now >= self.paused_until and self.in_flight < self.limit.slots


@dataclass(frozen=True)
class Grant:
    url: str
    seq: int
    ticket: str


def rendezvous(key: str, urls: list[str]) -> str:
    """The replica `key` is pinned to among `urls`: the highest hash of (key, url), the same in every process."""
    return max(urls, key=lambda url: hashlib.blake2b(f"{key}\x00{url}".encode(), digest_size=8).digest())


def metrics_url(base_url: str) -> str:
    """vLLM and SGLang serve /metrics at the server's root, beside /v1."""
    root = base_url.rstrip("/")
    return (root[: -len("/v1")] if root.endswith("/v1") else root) + "/metrics"


def gauges(text: str) -> dict[str, float]:
    """The queue gauges of a Prometheus page, summed over label sets (several models on one server)."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in (*WAITING, *KV_USAGE):
                found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found


def _first(values: dict[str, float], names: tuple[str, ...]) -> Optional[float]:
    return next((values[n] for n in names if n in values), None)


class FleetState:
    """The shared view of every replica a process (or, hosted by an actor, a Ray cluster) calls: each one's limit,
    calls in flight, waiting calls and health. All its methods run on one event loop."""

    def __init__(self) -> None:
        self.replicas: dict[str, Replica] = {}
        self._tickets: dict[str, tuple[Replica, int]] = {}  # granted: ticket -> (replica, sequence number)
        self._waiting: dict[str, _Waiter] = {}
        self._rotation: dict[tuple[str, ...], itertools.count] = {}
        self._watchers: dict[str, asyncio.Task] = {}  # probes of replicas taken out, readers of /metrics

    # ------------------------------------------------------------ calls

    async def acquire(self, urls: tuple[str, ...], policy: Policy, key: Optional[str], routing: Routing, ticket: str) -> Grant:
        """A slot on the replica this call goes to; waits while that replica is full. NoReplicaUp when all are out."""
        for url in urls:
            self._register(url, policy)
        replica = self._route(urls, key, routing)
        if replica.has_room(time.monotonic()) and not replica.waiters:
            return self._grant(replica, ticket)
        waiter = _Waiter(ticket, urls, key, routing, asyncio.get_running_loop().create_future())
        replica.waiters.append(waiter)
        self._waiting[ticket] = waiter
        self._dispatch(replica)  # a paused replica: wake its waiters when the pause ends
        try:
            return await waiter.future
        except asyncio.CancelledError:
            self.release(ticket, Outcome.neutral)
            raise

    def release(self, ticket: str, outcome: Outcome, retry_after_s: Optional[float] = None) -> None:
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
        self._learn(replica, seq, Outcome(outcome), retry_after_s)
        self._dispatch(replica)

    def forget(self, holder: str) -> None:
        """Free every slot and wait of the tickets of `holder` (a worker that died with calls in flight)."""
        for ticket in [t for t in [*self._tickets, *self._waiting] if t.startswith(f"{holder}/")]:
            self.release(ticket, Outcome.neutral)

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
            }
            for url, r in self.replicas.items()
        }

    async def aclose(self) -> None:
        for task in self._watchers.values():
            task.cancel()
        await asyncio.gather(*self._watchers.values(), return_exceptions=True)
        self._watchers.clear()

    # ------------------------------------------------------------ routing and slots

    def _register(self, url: str, policy: Policy) -> None:
        replica = self.replicas.get(url)
        if replica is None:
            self.replicas[url] = Replica(url, policy, self._limit(policy))
            if policy.admission is AdmissionMode.metrics:
                self._watch(url, self._follow_metrics(url))
        elif policy.maximum > replica.limit.maximum:  # two roles on one server: the larger maximum
            replica.limit.maximum = policy.maximum

    @staticmethod
    def _limit(policy: Policy) -> Limit:
        return Limit(policy.maximum, policy.initial, policy.admission is AdmissionMode.metrics)

    def _route(self, urls: tuple[str, ...], key: Optional[str], routing: Routing) -> Replica:
        up = [u for u in urls if self.replicas[u].up]
        if not up:
            raise NoReplicaUp(f"every replica is out: {', '.join(urls)} (probed back every few seconds)")
        if key is not None and routing is Routing.sticky:
            return self.replicas[rendezvous(key, up)]
        if routing is Routing.round_robin:
            turn = next(self._rotation.setdefault(urls, itertools.count()))
            return self.replicas[up[turn % len(up)]]
        return min((self.replicas[u] for u in up), key=lambda r: (r.in_flight + len(r.waiters)) / r.limit.value)

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
                target = self._route(waiter.urls, waiter.key, waiter.routing)
            except NoReplicaUp as exc:
                del self._waiting[waiter.ticket]
                waiter.future.set_exception(exc)
                continue
            target.waiters.append(waiter)
            self._dispatch(target)

    # ------------------------------------------------------------ learning

    def _learn(self, replica: Replica, seq: int, outcome: Outcome, retry_after_s: Optional[float]) -> None:
        if outcome is Outcome.ok:
            replica.fails_in_row = replica.refusals_in_row = 0
            replica.limit.succeeded()
        elif outcome is Outcome.refused:
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
        elif outcome is Outcome.failed:
            replica.fails_in_row += 1
            if replica.fails_in_row >= FAILS_TO_DOWN:
                self._take_out(replica, f"{replica.fails_in_row} failed calls in a row")
        elif outcome is Outcome.unreachable:
            self._take_out(replica, "it refused the connection")

    def _take_out(self, replica: Replica, why: str) -> None:
        if not replica.up:
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

    def _watch(self, name: str, job: object) -> None:
        if name not in self._watchers or self._watchers[name].done():
            self._watchers[name] = asyncio.get_running_loop().create_task(job)  # type: ignore[arg-type]

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
                waiting = _first(found, WAITING)
                if waiting is None:
                    log.warning("replica %s: no queue gauge at %s; admission follows refusals only", url, metrics_url(url))
                    replica.limit.follows_metrics = False
                    return
                replica.limit.follow(waiting, _first(found, KV_USAGE), replica.policy.target_queue)
                self._dispatch(replica)


def _watcher_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5.0))


class Admission(Protocol):
    """Where a process's clients take their slots: a `FleetState` of their own, or one shared by a Ray cluster."""

    async def acquire(
        self, urls: tuple[str, ...], policy: Policy, key: Optional[str], routing: Routing, ticket: str
    ) -> Grant: ...

    def release(self, ticket: str, outcome: Outcome, retry_after_s: Optional[float] = None) -> None: ...


_shared: Optional[Admission] = None
_local: dict[asyncio.AbstractEventLoop, FleetState] = {}
HOLDER = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"  # this process, in ticket names


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
        self._tickets = itertools.count()

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
        ticket = f"{HOLDER}/{next(self._tickets)}"
        return await admission().acquire(self.urls, self.policy, unit.key if unit else None, self.routing, ticket)

    def release(self, grant: Grant, outcome: Outcome, retry_after_s: Optional[float] = None) -> None:
        admission().release(grant.ticket, outcome, retry_after_s)


def outcome_of(status: Optional[int], unreachable: bool = False) -> Outcome:
    """A finished attempt's outcome for its replica: by HTTP status (None: no answer, a timeout or a cut connection)."""
    if unreachable:
        return Outcome.unreachable
    if status is None or (status >= 500 and status not in REFUSAL_STATUSES):
        return Outcome.failed
    if status in REFUSAL_STATUSES:
        return Outcome.refused
    return Outcome.ok if status < 300 else Outcome.neutral
