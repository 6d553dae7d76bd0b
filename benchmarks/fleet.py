"""Agent rollouts against a fleet of model servers: routing (prefix-cache reuse) and admission (back-pressure).

    python -m benchmarks.fleet --servers 2 --backend local [--rollouts 6] [--turns 6] [--rounds 2] [--json]
    python -m benchmarks.fleet --servers 4 --workers 8 --backend sim [--seconds 30] [--ramp-s 10] [--json]

`--backend local`: real llama.cpp servers (`llm=local`'s model, SmolLM2-135M, with the state cache on,
one thread each) on loopback. The same synthetic rollouts (a shared system prompt, then turns that add
the model's reply and a tool result of ~150 tokens; each round's conversations start with their own
nonce, so no round finds another's prompts cached) are played with `routing=sticky` and
`routing=round_robin`, interleaved (sticky, round robin, round robin, sticky, ...), through core.llm.fleet
with one call at a time per server. Each turn is streamed to time its first token; the prompt tokens it
found cached are the server's own counters (/metrics) read around it. "cached" counts the turns after
each rollout's first.

`--backend sim`: the replica SIMULATOR (tests/fakes/replica_sim.py: batch slots, a bounded queue answering
503, prefill and decode costs, a prefix cache) with `--workers` Ray actors each playing
`--rollouts-per-worker` rollouts at once through the real model client, for three admissions:
`per_process_429`, the limit this project had before fleets (a per-process AIMD limit at
`llm.max_concurrency`, cut on 429 only, calls spread round robin as a balancer would); `shared`, one
admission view for all workers (pipeline.fleet_admission), cut on 429/503/529; `shared_metrics`, the same
following the replicas' /metrics queue gauges (`llm.admission=metrics`). Figures are taken after
`--ramp-s`, over `--seconds`: the fleet's busy batch slots as a share of all (capacity), refused requests
as a share of all requests, prompt tokens served from cache, turn latency, rollouts per hour.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import aiohttp
import orjson
import ray
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.endpoint import percentile
from core.config import AdmissionMode, LLMConfig, Routing
from core.llm.client import ModelClient
from core.llm.fleet import Fleet, FleetState, admission, share
from core.llm.local_server import LocalServer, ServerSpec, bundled_model
from core.llm.replica_limit import CallOutcome, Grant, Policy, metrics_url
from core.records import Message
from core.run.metering import Unit, unit_scope
from fakes.replica_sim import SimSpec
from fakes.sim_fleet import simulated_fleet

SYSTEM = (
    "You are the Presenter. You design one HTML slide at a time, look at each rendered slide, and fix what you see. "
    "Tools: write_file(path, content), inspect_slide(path), finalize(outcome). Keep titles short, one idea per slide, "
    "at most five bullets, no paragraph longer than three lines, figures with captions, and a consistent palette. "
)
TOOL_RESULT = (
    "inspect_slide slides/slide_{n:02d}.html: rendered 1280x720. Title 'Tides and the moon' at 44px, two bullets at "
    "24px, one figure (figures/tide_{n}.png, 640x360) with its caption. Layout: no overflow, no overlap, margins 48px. "
    "Contrast ratio 7.1. The slide reads in about twelve seconds. Next: slide {m:02d} of the manuscript's outline."
)
MODES = {"local": ("sticky", "round_robin"), "sim": ("per_process_429", "shared", "shared_metrics")}


def conversation(nonce: str, rollout: int) -> list[Message]:
    return [Message("system", f"Session {nonce}. " + SYSTEM * 6), Message("user", f"Deck {rollout}: make 6 slides on tides.")]


def grow(messages: list[Message], reply: str, turn: int) -> None:
    messages += [Message("assistant", reply or "(no text)"), Message("user", TOOL_RESULT.format(n=turn + 1, m=turn + 2))]


def quantile(values: list[float], q: float) -> Optional[float]:
    """benchmarks.endpoint.percentile, None where nothing was measured."""
    return percentile(values, q) if values else None


@dataclass
class Figures:
    """One mode's figures, as `--json` prints them (None: a figure the mode cannot have)."""

    capacity_share: Optional[float] = None
    refused_share: Optional[float] = None
    cached_prompt_share: Optional[float] = None
    ttft_p50_s: Optional[float] = None
    turn_p50_s: Optional[float] = None
    turn_p95_s: Optional[float] = None
    rollouts_per_h: Optional[float] = None
    extra: dict[str, Any] = field(default_factory=dict)  # printed, not in the contract

    def to_json(self) -> dict[str, Optional[float]]:
        return {k: (None if v is None else round(v, 4)) for k, v in self.__dict__.items() if k != "extra"}


# ---------------------------------------------------------------- real llama.cpp servers


async def _counters(http: aiohttp.ClientSession, url: str) -> tuple[float, float]:
    """The local server's prompt tokens and cached prompt tokens so far (core/llm/llama_server.py's /metrics)."""
    async with http.get(metrics_url(url)) as response:
        text = await response.text()
    values = {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}
    return values["deckforge_llama_server_prompt_tokens_total"], values["deckforge_llama_server_prompt_tokens_cached_total"]


@dataclass
class Turns:
    ttft_s: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    prompt: float = 0.0  # after each rollout's first turn
    cached: float = 0.0
    refused: int = 0
    calls: int = 0


async def _stream_turn(http: aiohttp.ClientSession, grant: Grant, messages: list[Message], turns: Turns, first: bool) -> str:
    body = {
        "model": "smollm2-135m-instruct",
        "stream": True,
        "max_tokens": 24,
        "temperature": 0.2,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }
    before = await _counters(http, grant.url)
    sent, first_token, text = time.perf_counter(), None, []
    async with http.post(grant.url + "/chat/completions", json=body) as response:
        turns.calls += 1
        if response.status != 200:
            turns.refused += 1
            return ""
        async for raw in response.content:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = orjson.loads(line[6:])["choices"][0]["delta"].get("content")
            if delta:
                first_token = first_token or time.perf_counter() - sent
                text.append(delta)
    turns.wall_s.append(time.perf_counter() - sent)
    turns.ttft_s.append(first_token if first_token is not None else turns.wall_s[-1])
    after = await _counters(http, grant.url)  # one call at a time per server: the difference is this turn's
    if not first:
        turns.prompt += after[0] - before[0]
        turns.cached += after[1] - before[1]
    return "".join(text)


async def _local_round(urls: list[str], routing: Routing, rollouts: int, turn_count: int) -> Figures:
    cfg = LLMConfig(base_url=urls, routing=routing, max_concurrency=1, initial_concurrency=1)
    fleet, turns, nonce = Fleet(cfg), Turns(), uuid.uuid4().hex[:8]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http:

        async def play(rollout: int) -> None:
            messages = conversation(nonce, rollout)
            with unit_scope(Unit(key=f"{nonce}-{rollout}")):
                for turn in range(turn_count):
                    grant = await fleet.acquire()
                    try:
                        reply = await _stream_turn(http, grant, messages, turns, first=turn == 0)
                    finally:
                        fleet.release(grant, CallOutcome.ok)
                    grow(messages, reply, turn)

        started = time.perf_counter()
        await asyncio.gather(*(play(r) for r in range(rollouts)))
        elapsed = time.perf_counter() - started
    return Figures(
        refused_share=turns.refused / turns.calls,
        cached_prompt_share=turns.cached / turns.prompt if turns.prompt else None,
        ttft_p50_s=quantile(turns.ttft_s, 0.5),
        turn_p50_s=quantile(turns.wall_s, 0.5),
        turn_p95_s=quantile(turns.wall_s, 0.95),
        rollouts_per_h=rollouts / elapsed * 3600,
        extra={"ttft_mean_s": statistics.fmean(turns.ttft_s), "wall_s": elapsed},
    )


def run_local(args: argparse.Namespace) -> dict[str, Figures]:
    spec = ServerSpec(bundled_model(), "bounded-chatml-function-calling", 8192, "smollm2-135m-instruct")
    logs = Path("runs/benchmarks/fleet")
    with ExitStack() as stack:
        servers = [LocalServer(spec, logs / f"server_{i}.log") for i in range(args.servers)]
        for server in servers:
            server.start()
            stack.callback(server.stop)
        urls = [s.url for s in servers]
        order = [m for r in range(args.rounds) for m in (MODES["local"] if r % 2 == 0 else MODES["local"][::-1])]
        rounds: dict[str, list[Figures]] = {}
        for mode in order:
            figures = asyncio.run(_local_round(urls, Routing(mode), args.rollouts, args.turns))
            print(f"  {mode}: {_line(figures)}", file=sys.stderr, flush=True)  # progress; stdout is the result
            rounds.setdefault(mode, []).append(figures)
    return {mode: _pooled(results) for mode, results in rounds.items()}


def _pooled(results: list[Figures]) -> Figures:
    """The rounds of one mode: each figure's mean over them."""
    pooled = Figures()
    for name in Figures().to_json():
        values = [getattr(r, name) for r in results if getattr(r, name) is not None]
        setattr(pooled, name, statistics.fmean(values) if values else None)
    pooled.extra = {k: statistics.fmean(r.extra[k] for r in results) for k in results[0].extra}
    return pooled


# ---------------------------------------------------------------- the simulated fleet on Ray workers


class PerProcess429:
    """The admission main had before fleets, here only to be measured (a `core.llm.fleet.Admission`): a limit per process at
    llm.max_concurrency, halved on 429 only, with calls spread round robin as a balancer would. The simulator refuses
    with 503 (vLLM's full queue), a plain server error to it: the limit never moved."""

    def __init__(self, maximum: int):
        self.slots = asyncio.Semaphore(maximum)
        self.turn = 0

    async def acquire(self, urls: tuple[str, ...], policy: Policy, key: Optional[str], routing: Routing, ticket: str) -> Grant:
        await self.slots.acquire()
        self.turn += 1
        return Grant(urls[self.turn % len(urls)], 0, ticket)

    def release(self, ticket: str, outcome: CallOutcome, retry_after_s: Optional[float] = None) -> None:
        self.slots.release()


@ray.remote(num_cpus=0)
class BenchWorker:
    def __init__(self, urls: list[str], mode: str, fleet: Any, settings: dict[str, Any]):
        from pipeline.fleet_admission import RemoteAdmission

        admission = AdmissionMode.metrics if mode == "shared_metrics" else AdmissionMode.refusals
        self.cfg = LLMConfig(base_url=urls, model="sim", admission=admission, **settings)
        if mode == "per_process_429":
            share(PerProcess429(self.cfg.max_concurrency))
        else:
            share(RemoteAdmission(fleet), f"bench-{uuid.uuid4().hex[:6]}")
        self.turns: list[tuple[float, float]] = []  # (finished at, seconds)
        self.finished: list[float] = []

    def ready(self) -> bool:
        return True

    async def slot_cost(self, calls: int) -> dict[str, float]:
        """Microseconds of wall time and of this process's CPU per slot taken and given back, with no other call
        waiting: through this worker's admission (the actor, shared modes) and through one of its own (FleetState)."""
        fleet, costs = Fleet(self.cfg), {}
        for name, where in (("actor", admission()), ("in_process", FleetState())):
            wall, cpu = time.perf_counter(), time.process_time()
            for n in range(calls):
                grant = await where.acquire(fleet.urls, fleet.policy, f"k{n}", fleet.routing, f"overhead/{name}/{n}")
                where.release(grant.ticket, CallOutcome.ok)
            costs[f"{name}_wall_us"] = (time.perf_counter() - wall) / calls * 1e6
            costs[f"{name}_cpu_us"] = (time.process_time() - cpu) / calls * 1e6
        return costs

    async def play(self, rollouts: int, turns: int, seconds: float, name: str) -> tuple[list, list]:
        client = ModelClient(self.cfg, "agent")
        deadline = time.time() + seconds

        async def rollout_loop(slot: int) -> None:
            n = 0
            while time.time() < deadline:
                messages = conversation(f"{name}-{slot}-{n}", slot)
                with unit_scope(Unit(key=f"{name}-{slot}-{n}")):
                    for turn in range(turns):
                        started = time.time()
                        try:
                            reply = await client.chat(messages)
                        except Exception:  # noqa: BLE001 - a turn given up on: the rollout goes on, as an agent's would
                            continue
                        self.turns.append((time.time(), time.time() - started))
                        grow(messages, reply.content, turn)
                self.finished.append(time.time())
                n += 1

        await asyncio.gather(*(rollout_loop(s) for s in range(rollouts)))
        await client.aclose()
        return self.turns, self.finished


def run_sim(args: argparse.Namespace) -> dict[str, Figures]:
    spec = SimSpec(batch_slots=8, max_queued=8, decode_s_per_token=0.02, reply_tokens=24)
    settings = {"max_concurrency": 64, "initial_concurrency": 4}  # llm=vllm's maximum; backoff and retries as configured
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an embedded, single-user instance, as pipeline.rollouts starts
    ray.init(
        address="local", num_cpus=max(2, args.workers), include_dashboard=False, log_to_driver=False, configure_logging=False
    )
    from pipeline.fleet_admission import start_fleet_actor

    results = {}
    try:
        with simulated_fleet(args.servers, spec) as fleet:
            actor, _ = start_fleet_actor()
            probe = BenchWorker.remote(fleet.urls, "shared", actor, settings)
            costs = ray.get(probe.slot_cost.remote(args.slot_calls))
            ray.kill(probe)
            ray.kill(actor)
        print("  a slot per model call: " + ", ".join(f"{k} {v:.0f}" for k, v in costs.items()), file=sys.stderr, flush=True)
        for mode in MODES["sim"]:
            with simulated_fleet(args.servers, spec) as fleet:
                actor, _ = start_fleet_actor()
                workers = [BenchWorker.remote(fleet.urls, mode, actor, settings) for _ in range(args.workers)]
                ray.get([w.ready.remote() for w in workers])  # their processes started: the clock starts with their rollouts
                started = time.time()
                plays = [
                    w.play.remote(args.rollouts_per_worker, args.turns, args.ramp_s + args.seconds, f"w{i}")
                    for i, w in enumerate(workers)
                ]
                time.sleep(args.ramp_s)
                fleet.reset_stats()
                window_from = time.time()
                time.sleep(args.seconds)
                stats = fleet.stats()
                window_to = time.time()
                outcomes = ray.get(plays)
                snapshot = ray.get(actor.snapshot.remote()) if mode != "per_process_429" else {}
                for w in [*workers, actor]:
                    ray.kill(w)
            turn_s = [s for turns, _ in outcomes for at, s in turns if window_from <= at <= window_to]
            done = sum(window_from <= at <= window_to for _, finished in outcomes for at in finished)
            served, refused = sum(s.served for s in stats), sum(s.refused for s in stats)
            prompt, cached = sum(s.prompt_tokens for s in stats), sum(s.cached_tokens for s in stats)
            figures = Figures(
                capacity_share=sum(s.busy_slot_s for s in stats) / (spec.batch_slots * len(stats) * (window_to - window_from)),
                refused_share=refused / (served + refused) if served + refused else None,
                cached_prompt_share=cached / prompt if prompt else None,
                turn_p50_s=quantile(turn_s, 0.5),
                turn_p95_s=quantile(turn_s, 0.95),
                rollouts_per_h=done / (window_to - window_from) * 3600,
                extra={
                    "requests": served + refused,
                    "limits": [round(float(v["limit"]), 1) for v in snapshot.values()],
                    "wall_s": time.time() - started,
                },
            )
            print(f"  {mode}: {_line(figures)}", file=sys.stderr, flush=True)  # progress; stdout is the result
            results[mode] = figures
    finally:
        ray.shutdown()
    return results


# ---------------------------------------------------------------- output


def _pct(value: Optional[float]) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _s(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.3f} s"


def _line(f: Figures) -> str:
    return (
        f"capacity {_pct(f.capacity_share)}, refused {_pct(f.refused_share)}, cached prompt {_pct(f.cached_prompt_share)}, "
        f"ttft p50 {_s(f.ttft_p50_s)}, turn p50 {_s(f.turn_p50_s)} p95 {_s(f.turn_p95_s)}, "
        f"{f.rollouts_per_h or 0:,.0f} rollouts/h; "
        + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in f.extra.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("local", "sim"), required=True)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=8, help="sim: Ray workers playing rollouts")
    parser.add_argument("--rollouts-per-worker", type=int, default=16, help="sim: rollouts each worker plays at once")
    parser.add_argument("--rollouts", type=int, default=6, help="local: rollouts per round")
    parser.add_argument("--turns", type=int, default=6, help="turns per rollout")
    parser.add_argument("--rounds", type=int, default=2, help="local: rounds of each routing, interleaved")
    parser.add_argument("--seconds", type=float, default=30.0, help="sim: the measured window")
    parser.add_argument("--ramp-s", type=float, default=10.0, help="sim: seconds before the window")
    parser.add_argument("--slot-calls", type=int, default=2000, help="sim: slots taken to time the admission actor")
    parser.add_argument("--json", action="store_true", help='print one object: {"modes": {MODE: {figures}}}')
    args = parser.parse_args()
    results = run_local(args) if args.backend == "local" else run_sim(args)
    if args.json:
        print(json.dumps({"modes": {mode: f.to_json() for mode, f in results.items()}}))
        return
    print(f"\n{args.backend}, {args.servers} servers:")
    for mode, f in results.items():
        print(f"  {mode:16s} {_line(f)}")


if __name__ == "__main__":
    main()
