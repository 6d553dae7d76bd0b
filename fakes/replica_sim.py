"""A SIMULATOR of one vLLM replica under load, for tests and benchmarks of routing and admission control.

No model runs here: a request costs simulated time. ReplicaSim is a real OpenAI-compatible HTTP server on
loopback that schedules like a vLLM replica: at most `batch_slots` requests run at once, up to `max_queued`
more wait in order (the next is refused with vLLM's 503), a waiting request starts only when its tokens fit in
the KV-cache budget, and a cached message prefix makes its prefill cheaper (usage.prompt_tokens_details
reports it). /metrics shows its load under vLLM's metric names. Several replicas form a simulated fleet
(fakes.sim_fleet runs them in a process of their own).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import threading
import time
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import web

from fakes import provider_rules
from fakes.openai_server import _prompt_tokens

# The series of vLLM's /metrics a router reads: {name: (type, HELP)} as vLLM's PrometheusStatLogger declares them
# (vllm/v1/metrics/loggers.py, read in the code index), labelled model_name and engine as there. prometheus_client
# writes a counter declared as "vllm:prompt_tokens" as "vllm:prompt_tokens_total", the labels sorted (checked here).
METRICS = {
    "vllm:num_requests_running": ("gauge", "Number of requests in model execution batches."),
    "vllm:num_requests_waiting": ("gauge", "Number of requests waiting to be processed."),
    "vllm:kv_cache_usage_perc": ("gauge", "KV-cache usage. 1 means 100 percent usage."),
    "vllm:prefix_cache_queries_total": ("counter", "Prefix cache queries, in terms of number of queried tokens."),
    "vllm:prefix_cache_hits_total": ("counter", "Prefix cache hits, in terms of number of cached tokens."),
    "vllm:prompt_tokens_total": ("counter", "Number of prefill tokens processed."),
    "vllm:generation_tokens_total": ("counter", "Number of generation tokens processed."),
    "vllm:request_success_total": ("counter", "Count of successfully processed requests."),
}


@dataclass(frozen=True)
class SimSpec:
    """A replica's capacity and speed; the defaults make a request take about 0.2-1 s."""

    batch_slots: int = 8  # requests running at once (vLLM's --max-num-seqs)
    max_queued: int | None = 8  # requests waiting for a slot; one more is refused (--max-num-queued-reqs); None: unbounded
    kv_tokens: int = 200_000  # KV-cache budget: running requests' prompt + completion tokens, then cached prefixes
    prefill_s_per_token: float = 0.0001  # per prompt token not served from the prefix cache
    decode_s_per_token: float = 0.01
    reply_tokens: int = 32  # every reply's length, unless max_tokens asks for fewer
    max_model_len: int = 32768  # what /v1/models states
    retry_after_s: float | None = None  # a Retry-After header on the 503


@dataclass(frozen=True)
class SimStats:
    """A replica's counts over a measuring window: since it was made, or since reset_stats()."""

    served: int  # answered 200
    refused: int  # answered 503: the queue was full
    peak_in_flight: int  # most requests running and waiting at once
    peak_running: int
    prompt_tokens: int
    cached_tokens: int  # of those, read from the prefix cache
    completion_tokens: int
    busy_slot_s: float  # running requests integrated over time
    since: float  # time.monotonic() when the window began
    at: float  # time.monotonic() when this snapshot was taken
    batch_slots: int

    @property
    def capacity_share(self) -> float:
        """The share of the replica's slot-seconds in the window that requests used (0..1)."""
        elapsed = self.at - self.since
        return self.busy_slot_s / (self.batch_slots * elapsed) if elapsed > 0 else 0.0


@dataclass
class _Counts:
    """SimStats's counts as they grow."""

    served: int = 0
    refused: int = 0
    peak_in_flight: int = 0
    peak_running: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    busy_slot_s: float = 0.0
    since: float = field(default_factory=time.monotonic)


@dataclass
class _Entry:
    """A cached message prefix."""

    tokens: int  # the prefix's prompt tokens
    size: int  # what it adds to the prefix one message shorter: the KV-cache tokens it holds itself
    pins: int = 0  # running requests that read it (it cannot be evicted while they run)


@dataclass(eq=False)
class _Job:
    messages: list[Any]
    keys: list[bytes]  # one per message prefix
    prompt_tokens: int
    completion_tokens: int
    admitted: asyncio.Future[None]
    hits: list[bytes] = field(default_factory=list)  # the cached prefixes it reads
    cached_tokens: int = 0

    @property
    def own_tokens(self) -> int:
        """The KV-cache tokens it holds beyond the cached prefix it reads."""
        return self.prompt_tokens + self.completion_tokens - self.cached_tokens


def _next_key(key: bytes, message: Any) -> bytes:
    """A rolling hash: the key of a prefix extended by `message`."""
    return hashlib.blake2b(key + json.dumps(message, sort_keys=True).encode(), digest_size=16).digest()


def _prefix_keys(messages: list[Any]) -> list[bytes]:
    keys, key = [], b""
    for message in messages:
        key = _next_key(key, message)
        keys.append(key)
    return keys


class ReplicaSim:
    """`with ReplicaSim(spec) as sim:` then point a client at `sim.url`; stop() and start() take it down and back."""

    def __init__(self, spec: SimSpec = SimSpec(), model: str = "sim", port: int = 0):
        self.spec = spec
        self.model = model
        self.port = port
        self._lock = threading.Lock()  # stats() reads from other threads what the event loop writes
        self._waiting: deque[_Job] = deque()
        self._running: set[_Job] = set()
        self._cache: OrderedDict[bytes, _Entry] = OrderedDict()  # least recently used first
        self._cache_tokens = 0  # the sizes of all entries
        self._pinned_tokens = 0  # the sizes of entries that running requests read
        self._own_tokens = 0  # running requests' tokens beyond what they read from the cache
        self._window = _Counts()  # what stats() reports
        self._life = _Counts()  # what /metrics reports: since the replica last came up
        self._ticked = time.monotonic()
        self._ids = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="replica-sim")
        self._runner: web.AppRunner | None = None
        self._handlers: set[asyncio.Task[Any]] = set()  # of the requests to /v1/chat/completions in flight

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ReplicaSim:
        self.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def start(self) -> None:
        """Bring the replica up on its port (the first start picks a free one) with an empty prefix cache and its
        /metrics counters from zero, as a restarted vLLM comes back."""
        if not self._thread.is_alive():
            self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)

    def stop(self) -> None:
        """Take the replica down: its socket closes, so connections are refused, and the requests in flight lose
        theirs. stats() and the port are kept."""
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)

    def stats(self) -> SimStats:
        with self._lock:
            self._tick()
            return SimStats(**asdict(self._window), at=self._ticked, batch_slots=self.spec.batch_slots)

    def reset_stats(self) -> None:
        """Start a new measuring window: counts from zero, peaks from what is in flight now. The prefix cache and
        the requests in flight stay."""
        with self._lock:
            self._tick()
            running = len(self._running)
            self._window = _Counts(peak_in_flight=running + len(self._waiting), peak_running=running, since=self._ticked)

    # -- the server ---------------------------------------------------------------------------------------

    async def _start(self) -> None:
        if self._runner is not None:
            return
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/metrics", self._metrics)
        # handler_cancellation: a client that hangs up frees its slot, as vLLM aborts a disconnected request
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self._runner = runner
        with self._lock:
            self._life = _Counts()

    async def _stop(self) -> None:
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        for site in list(runner.sites):
            await site.stop()
        handlers = list(self._handlers)
        for task in handlers:  # at once, not after aiohttp's graceful wait: each closes its connection and _drops its job
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await runner.cleanup()
        with self._lock:
            self._cache.clear()
            self._cache_tokens = self._pinned_tokens = 0

    async def _models(self, _: web.Request) -> web.Response:
        card = {"id": self.model, "object": "model", "created": 0, "owned_by": "vllm", "max_model_len": self.spec.max_model_len}
        return web.json_response({"object": "list", "data": [card]})

    async def _chat(self, request: web.Request) -> web.Response:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)
        body = await request.json()
        messages = body.get("messages") or []
        asked = body.get("max_completion_tokens") or body.get("max_tokens") or self.spec.reply_tokens
        job = _Job(
            messages,
            _prefix_keys(messages),
            _prompt_tokens(messages),
            min(asked, self.spec.reply_tokens),
            self._loop.create_future(),
        )
        if not self._enqueue(job):
            refusal = provider_rules.queue_full()
            retry = self.spec.retry_after_s
            headers = {"Retry-After": f"{retry:g}"} if retry is not None else None
            return web.json_response(refusal.body, status=refusal.status, headers=headers)
        try:
            await job.admitted
            uncached = job.prompt_tokens - job.cached_tokens
            await asyncio.sleep(self.spec.prefill_s_per_token * uncached + self.spec.decode_s_per_token * job.completion_tokens)
        except BaseException:  # cancelled: the client hung up or the replica went down
            self._drop(job)
            raise
        message = {"role": "assistant", "content": " ".join(["tok"] * job.completion_tokens)}  # 4 characters a token
        self._finish(job, message)
        return web.json_response(
            {
                "id": f"chatcmpl-sim-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
                "usage": {
                    "prompt_tokens": job.prompt_tokens,
                    "completion_tokens": job.completion_tokens,
                    "total_tokens": job.prompt_tokens + job.completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": job.cached_tokens},
                },
            }
        )

    async def _metrics(self, _: web.Request) -> web.Response:
        with self._lock:
            life = self._life
            values = {
                "vllm:num_requests_running": len(self._running),
                "vllm:num_requests_waiting": len(self._waiting),
                "vllm:kv_cache_usage_perc": min(1.0, (self._own_tokens + self._pinned_tokens) / self.spec.kv_tokens),
                "vllm:prefix_cache_queries_total": life.prompt_tokens,
                "vllm:prefix_cache_hits_total": life.cached_tokens,
                "vllm:prompt_tokens_total": life.prompt_tokens,
                "vllm:generation_tokens_total": life.completion_tokens,
                "vllm:request_success_total": life.served,
            }
        lines = []
        for name, value in values.items():
            kind, doc = METRICS[name]
            labels = f'engine="0",model_name="{self.model}"'
            if name == "vllm:request_success_total":
                labels = f'engine="0",finished_reason="stop",model_name="{self.model}"'
            lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}", f"{name}{{{labels}}} {float(value)}"]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain", charset="utf-8")

    # -- the scheduler: called on the event loop --------------------------------------------------------------

    def _tick(self) -> None:
        """Add the slot-seconds since the last call (call it, under the lock, before the running set changes)."""
        now = time.monotonic()
        self._window.busy_slot_s += len(self._running) * (now - self._ticked)
        self._ticked = now

    def _count(self, **added: int) -> None:
        for counts in (self._window, self._life):
            for name, n in added.items():
                setattr(counts, name, getattr(counts, name) + n)

    def _enqueue(self, job: _Job) -> bool:
        """Queue `job` and start what can start; False (and nothing queued) when the queue was already full."""
        with self._lock:
            self._waiting.append(job)
            self._admit()
            if not job.admitted.done() and self.spec.max_queued is not None and len(self._waiting) > self.spec.max_queued:
                self._waiting.pop()  # the last one: `job`
                self._count(refused=1)
                return False
            w = self._window
            w.peak_in_flight = max(w.peak_in_flight, len(self._running) + len(self._waiting))
            return True

    def _admit(self) -> None:
        """Start waiting requests in order while a slot is free and the first one's tokens fit."""
        while self._waiting and len(self._running) < self.spec.batch_slots:
            job = self._waiting[0]
            if job.admitted.cancelled():  # its handler is being cancelled and has yet to _drop it
                self._waiting.popleft()
                continue
            hits = []
            for key in job.keys:  # a prefix counts only when every shorter one is cached too, as vLLM's block chain
                if key not in self._cache:
                    break
                hits.append(key)
            job.cached_tokens = self._cache[hits[-1]].tokens if hits else 0
            # A request over the whole budget (vLLM would refuse it) runs alone rather than block the queue forever.
            if not self._make_room(job.own_tokens, keep=set(hits)) and self._running:
                return
            self._waiting.popleft()
            job.hits = hits
            for key in reversed(hits):
                self._cache.move_to_end(key)
                self._pin(key, 1)
            self._tick()
            self._running.add(job)
            self._own_tokens += job.own_tokens
            self._count(prompt_tokens=job.prompt_tokens, cached_tokens=job.cached_tokens)
            self._window.peak_running = max(self._window.peak_running, len(self._running))
            job.admitted.set_result(None)

    def _make_room(self, need: int, keep: set[bytes]) -> bool:
        """Evict cached prefixes no running request reads, least recently used first, until `need` more tokens
        fit; False, evicting nothing, when they cannot."""
        spare = self.spec.kv_tokens - self._own_tokens - self._cache_tokens
        if spare >= need:
            return True
        evictable = [key for key, entry in self._cache.items() if not entry.pins and key not in keep]
        if spare + sum(self._cache[key].size for key in evictable) < need:
            return False
        for key in evictable:
            if spare >= need:
                break
            entry = self._cache.pop(key)
            self._cache_tokens -= entry.size
            spare += entry.size
        return True

    def _pin(self, key: bytes, step: int) -> None:
        """Count one more (step=1) or one fewer (step=-1) running request reading a cached prefix."""
        entry = self._cache[key]
        pinned = entry.pins > 0
        entry.pins += step
        if (entry.pins > 0) != pinned:
            self._pinned_tokens += step * entry.size

    def _release(self, job: _Job) -> None:
        self._tick()
        self._running.discard(job)
        self._own_tokens -= job.own_tokens
        for key in job.hits:
            self._pin(key, -1)

    def _drop(self, job: _Job) -> None:
        with self._lock:
            if job in self._running:
                self._release(job)
            elif job in self._waiting:
                self._waiting.remove(job)
            self._admit()

    def _finish(self, job: _Job, reply: dict[str, Any]) -> None:
        """Count `job` served and cache every message prefix of its prompt and the prompt with its reply."""
        with self._lock:
            self._release(job)
            self._count(served=1, completion_tokens=job.completion_tokens)
            sequence = [*job.messages, reply]
            keys = [*job.keys, _next_key(job.keys[-1] if job.keys else b"", reply)]
            shorter = 0
            for i, key in enumerate(keys, 1):
                entry = self._cache.get(key)
                if entry is None:
                    tokens = _prompt_tokens(sequence[:i])
                    entry = self._cache[key] = _Entry(tokens, tokens - shorter)
                    self._cache_tokens += entry.size
                shorter = entry.tokens
            for key in reversed(keys):  # the shortest prefixes last: they are evicted last
                self._cache.move_to_end(key)
            self._make_room(0, keep=set())
            self._admit()
