"""Agent rollouts against a fleet of model servers: routing (prefix-cache reuse, load spread) and admission (back-pressure).

    python -m benchmarks.fleet --servers 2 --backend local [--rollouts 8] [--turns 6] [--rounds 3] [--json]
    python -m benchmarks.fleet --servers 4 --workers 8 --backend sim [--seconds 30] [--ramp-s 10] [--rounds 3] [--json]

Each mode is played `--rounds` times, the modes in turn (A B A B ...), so a noisy machine shows as spread
between repeats; every repeat is printed, and the figures of a mode are their medians.

`--backend local`: real llama.cpp servers (`llm=local`'s model, SmolLM2-135M, with the state cache on,
one thread each) on loopback. The same synthetic rollouts (a shared system prompt, then turns that add
the model's reply and a tool result of ~150 tokens; each round's conversations start with their own
nonce, so no round finds another's prompts cached) are played with `routing=sticky` (its load bound as
configured, 1.25) and `routing=round_robin` (and, asked for, `sticky_unbounded`: pure rendezvous hashing),
through core.llm.fleet with one call at a time per server. `--rollouts` (default 4 per server, plus one)
should be more than 3 per server, so that one round is not one coin flip of the hash, and prime to the
number of servers: with a multiple of it, rollouts that keep calling in the same order land on the same
server every turn under round robin too, a stickiness by accident that real runs (tools of varying length)
do not have. Each turn is streamed to time its
first token; the prompt tokens it found cached are the server's own counters (/metrics) read around it.
"cached" counts the turns after each rollout's first.

`--backend sim`: the replica SIMULATOR (tests/fakes/replica_sim.py: batch slots, a bounded queue answering
503, prefill and decode costs, a prefix cache) with `--workers` Ray actors each playing
`--rollouts-per-worker` rollouts at once through the real model client. Rollout lengths are skewed: each
rollout's turns are drawn log-normally around `--turns` (sigma `--length-skew`), the same draws in every mode.
Modes: `per_process_429`, the limit this project had before fleets (a per-process AIMD limit at
`llm.max_concurrency`, cut on 429 only, calls spread round robin as a balancer would); `shared`, one
admission view for all workers (pipeline.fleet_admission), cut on 429/503/529, sticky routing with its load
bound; `shared_metrics`, the same following the replicas' /metrics queue gauges (`llm.admission=metrics`);
`shared_round_robin`, the shared admission with round-robin routing; asked for, `shared_unbounded`, sticky
without a bound. Figures are taken after `--ramp-s`, over `--seconds`: the fleet's busy batch slots as a
share of all (capacity), refused requests as a share of all requests, prompt tokens served from cache, turn
latency, rollouts per hour.

Sticky modes also report the spread of units over the replicas (the most units on one replica over the
mean; a unit counts where its last call went) and the share of units moved past the load bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from benchmarks.fleet_figures import (
    DEFAULT_MODES,
    MODES,
    Figures,
    Mode,
    conversation,
    grow,
    line,
    median_of,
    quantile,
    repeat,
    spread,
    turns_of,
)
from core.config import LLMConfig, Routing
from core.llm.client import ModelClient
from core.llm.fleet import Fleet, FleetState, admission, share
from core.llm.local_server import LocalServer, ServerSpec, bundled_model
from core.llm.replica_limit import CallOutcome, Grant, Policy, metrics_url
from core.records import Message
from core.run.metering import Unit, unit_scope
from fakes.replica_sim import SimSpec
from fakes.sim_fleet import simulated_fleet

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


async def _local_round(urls: list[str], mode: Mode, rollouts: int, turn_count: int) -> Figures:
    cfg = LLMConfig(
        base_url=urls, routing=mode.routing, routing_load_bound=mode.load_bound, max_concurrency=1, initial_concurrency=1
    )
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
    units_max_mean, moved_share = spread(admission().snapshot())
    return Figures(
        refused_share=turns.refused / turns.calls,
        cached_prompt_share=turns.cached / turns.prompt if turns.prompt else None,
        ttft_p50_s=quantile(turns.ttft_s, 0.5),
        turn_p50_s=quantile(turns.wall_s, 0.5),
        turn_p95_s=quantile(turns.wall_s, 0.95),
        rollouts_per_h=rollouts / elapsed * 3600,
        units_max_mean=units_max_mean,
        moved_share=moved_share,
        extra={"ttft_mean_s": statistics.fmean(turns.ttft_s), "wall_s": elapsed},
    )


def run_local(args: argparse.Namespace, modes: list[str]) -> dict[str, list[Figures]]:
    spec = ServerSpec(bundled_model(), "bounded-chatml-function-calling", 8192, "smollm2-135m-instruct")
    logs = Path("runs/benchmarks/fleet")
    rollouts = args.rollouts or 4 * args.servers + 1
    with ExitStack() as stack:
        servers = [LocalServer(spec, logs / f"server_{i}.log") for i in range(args.servers)]
        for server in servers:
            server.start()
            stack.callback(server.stop)
        urls = [s.url for s in servers]
        return repeat(
            modes, args.rounds, lambda mode: asyncio.run(_local_round(urls, MODES["local"][mode], rollouts, args.turns))
        )


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
    def __init__(self, urls: list[str], mode: Mode, fleet: Any, settings: dict[str, Any]):
        from pipeline.fleet_admission import RemoteAdmission

        self.cfg = LLMConfig(
            base_url=urls,
            model="sim",
            routing=mode.routing,
            routing_load_bound=mode.load_bound,
            admission=mode.admission,
            **settings,
        )
        if mode.per_process:
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

    async def play(self, rollouts: int, turns: int, skew: float, seconds: float, name: str) -> tuple[list, list]:
        client = ModelClient(self.cfg, "agent")
        deadline = time.time() + seconds

        async def rollout_loop(slot: int) -> None:
            n = 0
            while time.time() < deadline:
                key = f"{name}-{slot}-{n}"
                messages = conversation(key, slot)
                with unit_scope(Unit(key=key)):
                    for turn in range(turns_of(key, turns, skew)):
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


SIM_SPEC = SimSpec(batch_slots=8, max_queued=8, decode_s_per_token=0.02, reply_tokens=24)
SIM_SETTINGS = {"max_concurrency": 64, "initial_concurrency": 4}  # llm=vllm's maximum; backoff and retries as configured


def run_sim(args: argparse.Namespace, modes: list[str]) -> dict[str, list[Figures]]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an embedded, single-user instance, as pipeline.rollouts starts
    ray.init(
        address="local", num_cpus=max(2, args.workers), include_dashboard=False, log_to_driver=False, configure_logging=False
    )
    from pipeline.fleet_admission import start_fleet_actor

    try:
        with simulated_fleet(args.servers, SIM_SPEC) as fleet:
            actor, _ = start_fleet_actor()
            probe = BenchWorker.remote(fleet.urls, MODES["sim"]["shared"], actor, SIM_SETTINGS)
            costs = ray.get(probe.slot_cost.remote(args.slot_calls))
            ray.kill(probe)
            ray.kill(actor)
        print("  a slot per model call: " + ", ".join(f"{k} {v:.0f}" for k, v in costs.items()), file=sys.stderr, flush=True)
        return repeat(modes, args.rounds, lambda mode: _sim_round(args, MODES["sim"][mode]))
    finally:
        ray.shutdown()


def _sim_round(args: argparse.Namespace, mode: Mode) -> Figures:
    """One mode on a fresh simulated fleet (empty caches) with a fresh admission actor."""
    from pipeline.fleet_admission import start_fleet_actor

    with simulated_fleet(args.servers, SIM_SPEC) as fleet:
        actor, _ = start_fleet_actor()
        workers = [BenchWorker.remote(fleet.urls, mode, actor, SIM_SETTINGS) for _ in range(args.workers)]
        ray.get([w.ready.remote() for w in workers])  # their processes started: the clock starts with their rollouts
        started = time.time()
        plays = [
            w.play.remote(args.rollouts_per_worker, args.turns, args.length_skew, args.ramp_s + args.seconds, f"w{i}")
            for i, w in enumerate(workers)
        ]
        time.sleep(args.ramp_s)
        fleet.reset_stats()
        window_from = time.time()
        time.sleep(args.seconds)
        stats = fleet.stats()
        window_to = time.time()
        outcomes = ray.get(plays)
        snapshot = {} if mode.per_process else ray.get(actor.snapshot.remote())
        for w in [*workers, actor]:
            ray.kill(w)
    turn_s = [s for turns, _ in outcomes for at, s in turns if window_from <= at <= window_to]
    done = sum(window_from <= at <= window_to for _, finished in outcomes for at in finished)
    served, refused = sum(s.served for s in stats), sum(s.refused for s in stats)
    prompt, cached = sum(s.prompt_tokens for s in stats), sum(s.cached_tokens for s in stats)
    units_max_mean, moved_share = spread(snapshot)
    return Figures(
        capacity_share=sum(s.busy_slot_s for s in stats) / (SIM_SPEC.batch_slots * len(stats) * (window_to - window_from)),
        refused_share=refused / (served + refused) if served + refused else None,
        cached_prompt_share=cached / prompt if prompt else None,
        turn_p50_s=quantile(turn_s, 0.5),
        turn_p95_s=quantile(turn_s, 0.95),
        rollouts_per_h=done / (window_to - window_from) * 3600,
        units_max_mean=units_max_mean,
        moved_share=moved_share,
        extra={
            "requests": served + refused,
            "limits": [round(float(v["limit"]), 1) for v in snapshot.values()],
            "wall_s": time.time() - started,
        },
    )


# ---------------------------------------------------------------- output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("local", "sim"), required=True)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument(
        "--modes",
        help=f"comma-separated, in the order played; local: {', '.join(MODES['local'])} "
        f"(default {DEFAULT_MODES['local']}); sim: {', '.join(MODES['sim'])} (default {DEFAULT_MODES['sim']})",
    )
    parser.add_argument("--workers", type=int, default=8, help="sim: Ray workers playing rollouts")
    parser.add_argument("--rollouts-per-worker", type=int, default=16, help="sim: rollouts each worker plays at once")
    parser.add_argument("--rollouts", type=int, help="local: rollouts per round (default 4 per server, plus one)")
    parser.add_argument("--turns", type=int, default=6, help="turns per rollout (sim: their mean)")
    parser.add_argument(
        "--length-skew", type=float, default=0.8, help="sim: sigma of the rollouts' log-normal turns (0: all equal)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="repeats of each mode, the modes in turn (A B A B ...)")
    parser.add_argument("--seconds", type=float, default=30.0, help="sim: the measured window")
    parser.add_argument("--ramp-s", type=float, default=10.0, help="sim: seconds before the window")
    parser.add_argument("--slot-calls", type=int, default=2000, help="sim: slots taken to time the admission actor")
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one object: {"modes": {MODE: {median figures}}, "repeats": {MODE: [{figures}]}}',
    )
    args = parser.parse_args()
    modes = (args.modes or DEFAULT_MODES[args.backend]).split(",")
    unknown = [m for m in modes if m not in MODES[args.backend]]
    if unknown:
        parser.error(
            f"--modes: {', '.join(unknown)} unknown for --backend {args.backend}; known: {', '.join(MODES[args.backend])}"
        )
    repeats = run_local(args, modes) if args.backend == "local" else run_sim(args, modes)
    medians = {mode: median_of(results) for mode, results in repeats.items()}
    if args.json:
        print(
            json.dumps(
                {
                    "modes": {mode: f.to_json() for mode, f in medians.items()},
                    "repeats": {mode: [f.to_json() for f in results] for mode, results in repeats.items()},
                }
            )
        )
        return
    print(f"\n{args.backend}, {args.servers} servers, median of {args.rounds} repeats:")
    for mode, f in medians.items():
        print(f"  {mode:18s} {line(f)}")


if __name__ == "__main__":
    main()
