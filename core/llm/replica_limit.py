"""How many calls one replica may hold, and what moves that limit (core/llm/fleet.py keeps one per replica).

`Limit` starts at `initial_concurrency`, doubles each round of successes until the first refusal (HTTP 429,
503, 529: a rate limit, vLLM's full queue, an overloaded gateway), then cuts to 0.8x what was in flight
(once per burst: a refusal of a call sent before the cut is the same overload) and grows by one per
round, 16 times slower near the level that was refused. With `llm.admission=metrics`, after slow start,
it follows the replica's queue gauges instead (`gauges`: vLLM's and SGLang's /metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from prometheus_client.parser import text_string_to_metric_families

from core.config import AdmissionMode, LLMConfig

REFUSAL_STATUSES = frozenset({429, 503, 529})  # rate limited; vLLM's admission (a full queue); an overloaded gateway
CUT = 0.8  # a refused limit goes to this share of the calls then in flight
PLATEAU = 16  # near the level last refused, the limit grows this many times slower: ~one refusal per 16 rounds
KV_FULL = 0.95  # admission=metrics: above this KV-cache use the limit does not grow (vLLM would preempt)
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs")
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage")


class CallOutcome(str, Enum):
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
    load_bound: float = 0.0  # routing=sticky: the most calls a replica takes, as a factor of the fleet's mean (0: none)

    @classmethod
    def of(cls, cfg: LLMConfig) -> Policy:
        return cls(
            cfg.max_concurrency,
            min(cfg.initial_concurrency, cfg.max_concurrency),
            AdmissionMode(cfg.admission),
            cfg.target_queue,
            cfg.probe_interval_s,
            cfg.backoff_max_s,
            cfg.routing_load_bound,
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


def first(values: dict[str, float], names: tuple[str, ...]) -> Optional[float]:
    return next((values[n] for n in names if n in values), None)


def outcome_of(status: Optional[int], unreachable: bool = False) -> CallOutcome:
    """A finished attempt's outcome for its replica: by HTTP status (None: no answer, a timeout or a cut connection)."""
    if unreachable:
        return CallOutcome.unreachable
    if status is None or (status >= 500 and status not in REFUSAL_STATUSES):
        return CallOutcome.failed
    if status in REFUSAL_STATUSES:
        return CallOutcome.refused
    return CallOutcome.ok if status < 300 else CallOutcome.neutral


@dataclass(frozen=True)
class Grant:
    """A call's slot on a replica: where it goes, the replica's count of grants when it was made (a burst of refusals
    cuts the limit once: those granted before the cut do not cut it again), and the call's ticket."""

    url: str
    seq: int
    ticket: str
