"""Rollouts per hour on this machine against a model endpoint with a fixed latency, vs the ideal.

    python -m benchmarks.rollout_throughput [--latency 0.3] [--concurrency 1 8 32 64] [--repeats 3] [--jail bubblewrap commands none] [--pptx-mode editable|picture]

Each model call goes over HTTP to the fake OpenAI server (own process, fixed latency),
and the answer played is the scripted policy's, so the tools, renders and exports are
real. For each concurrency the ideal is the lower of two bounds: model latency alone
(concurrency x 3600 / (calls per rollout x latency)) and this machine's render capacity
for these rollouts' renders (renders/s / renders per rollout x 3600). The capacity is
measured on decks the benchmark's rollouts produced (their slides with the figures they
placed; a first batch of rollouts is played for them): 64 decks replayed 8 at a time, rated
in steady state as the rollouts are, a deck's slides inspected together (PNG, measurements,
PDF page), then the deck exported, which reuses the renders of unchanged slides. `--pptx-mode`
is `deck.pptx_mode` for the rollouts and the capacity decks alike (editable: the renderer reads
each printed page's layout and the export writes native PowerPoint objects; picture: one
picture per slide), so the two modes can be compared run against run.

The rollouts run as a user would run that many: a worker per 16 in flight, at most two
(one per CPU; with the ramp below, 2 x 32 played 6% more than 4 x 16 at 64 in flight), the
first wave's starts spread over one rollout's model time (`ray.ramp_up_s`; with one latency
and one script, rollouts started together would otherwise stay in lockstep). The rate is the
steady state, while `concurrency` rollouts are in flight: from the concurrency-th finish to
the last one before the queue runs dry (start-up and drain excluded; "wall s" includes
them and the capacity measurements). This machine's speed drifts by up to ~30% from one
minute to the next, so each row is measured `--repeats` times, each between two
measurements of the capacity; the row pools them (rollouts and seconds summed, the
capacity averaged), and "each" gives every measurement against its own two capacities.

`--jail` names the setups to compare (default bubblewrap alone): `bubblewrap`, the agents'
commands and Chromium each in their jail (`tools.sandbox.jail`, `render.jail`); `commands`, the
commands alone (Chromium unjailed, as before the render jail); `none`, neither. Each repeat plays
them in turn, each between two capacity measurements, and each gets its own row.

Where the ratio goes: "cpu ms/r" is this machine's busy CPU per rollout over the steady windows
(every process: workers, browsers, the fake server, Ray), "/deck" the same per deck in the
capacity measurements; "busy" and "/cap" the share of the CPUs busy in each. Render-bound, the
ratio is about (/deck / cpu ms/r) x (busy / /cap): CPU a rollout spends beyond its renders, or
CPUs left idle.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import os
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self, Sequence

import psutil
import ray
from hydra import compose, initialize_config_dir

from benchmarks.endpoint import fake_endpoint
from core.config import PROJECT_ROOT, LLMConfig, RayConfig
from core.llm.client import ModelClient
from core.llm.results import ChatResult
from core.protocols import Model
from core.records import Constraints, Message, Rollout, RolloutStatus, Task, read_parquet
from core.run.context import open_run
from core.run.packed import RECORD
from core.run.store import atomic_write_parquet
from deck.config import DeckConfig, PptxMode
from deck.export import export_deck, page_reader
from fakes.openai_server import Reply
from pipeline.config import store_schema
from pipeline.rollouts import init_ray, run_rollouts, workspace_for
from pipeline.runner import DeckRunner
from render.config import RenderConfig
from render.inspection import inspect_slide
from render.renderer import Renderer

SLIDES = 4
POOL_CONCURRENCY, POOL_DECKS = 8, 24  # the rollouts played first for their decks, on which the render capacity is measured


class PacedModel:
    """The scripted policy's answers, each after a real round trip to the latency server."""

    def __init__(self, policy: Model, client: ModelClient):
        self.policy, self.client, self.name = policy, client, "scripted-behind-http"
        self.context_window, self.profile, self.vision = policy.context_window, policy.profile, policy.vision

    async def chat(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None, image_root: Path | None = None
    ) -> ChatResult:
        await self.client.chat(list(messages[-2:]), image_root=image_root)
        return await self.policy.chat(messages, tools, image_root)


class PacedRunner(DeckRunner):
    async def start(self) -> None:
        await super().start()
        self.paced = ModelClient(LLMConfig(base_url=self.cfg.llm.base_url, model="fake", max_concurrency=1024), "agent")
        scripted = self.model
        assert scripted is not None
        self.model = lambda role, brief: PacedModel(scripted(role, brief), self.paced)

    async def close(self) -> None:
        await super().close()
        await self.paced.aclose()


class BusyCPU:
    """This machine's busy CPU time (every process: the rollouts' own, the fake server's, Ray's),
    sampled every `interval_s` from a thread, to tell what a rollout or a deck cost in CPU."""

    def __init__(self, interval_s: float = 0.1):
        self.interval_s = interval_s
        self.samples: list[tuple[float, float]] = []  # (time.time(), busy CPU-seconds so far)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="busy-cpu", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            times = psutil.cpu_times()  # busy: not idle, waiting on I/O or stolen by the hypervisor
            used = times.user + times.system + sum(getattr(times, f, 0.0) for f in ("nice", "irq", "softirq"))
            self.samples.append((time.time(), used))
            if self._stop.wait(self.interval_s):
                return

    def between(self, start: float, end: float) -> float:
        """Busy CPU-seconds from `start` to `end` (time.time()), to the nearest samples."""
        first, last = (
            min(bisect.bisect_left(self.samples, x, key=lambda sample: sample[0]), len(self.samples) - 1) for x in (start, end)
        )
        return self.samples[last][1] - self.samples[first][1]


@dataclass(frozen=True)
class Window:
    """A steady-state stretch: rollouts (or decks) finished, seconds, the machine's busy CPU-seconds."""

    units: int
    seconds: float
    cpu_s: float
    renders: int = 0  # decks: their slides


def cpu_ms_per_unit(windows: Sequence[Window]) -> float:
    return sum(w.cpu_s for w in windows) / sum(w.units for w in windows) * 1000


def busy(windows: Sequence[Window]) -> float:
    """The share of this machine's CPUs busy over `windows`."""
    return sum(w.cpu_s for w in windows) / sum(w.seconds for w in windows) / (os.cpu_count() or 1)


async def render_capacity(decks: Sequence[Path], cpu: BusyCPU, deck: DeckConfig, replays: int = 64, in_flight: int = 8) -> Window:
    """Renders per second for the render mix of rollouts, in steady state.

    Replays `replays` of the rollouts' `decks` (their slides and assets, copied to fresh paths so
    nothing is served from a cache; cycled when there are fewer): the slides of a deck inspected
    together (PNG, measurements, PDF page), as the scripted Presenter's one turn does, then the
    deck exported (reusing those renders: PDF merge, previews, PPTX); `in_flight` decks at a time,
    on one renderer with 8 renders in flight (as many as one process needs to reach its best rate
    here, whatever the workers' own `render.max_concurrent`). The rate is taken as the rollouts'
    is: from the in_flight-th finished deck to the last before the queue runs dry.
    """
    with tempfile.TemporaryDirectory() as tmp:
        copies = itertools.count()

        def copy(deck: Path) -> Path:
            root = Path(tmp) / f"deck{next(copies)}"
            for part in ("slides", "assets"):
                if (deck / part).is_dir():
                    shutil.copytree(deck / part, root / part)
            return root

        async with Renderer(
            RenderConfig(max_concurrent=8, max_pages=8), roots=[Path(tmp)], read_page=page_reader(deck)
        ) as renderer:
            slots = asyncio.Semaphore(in_flight)
            finished: list[tuple[float, int]] = []

            async def replay(root: Path) -> None:
                async with slots:
                    slides = sorted((root / "slides").glob("*.html"))
                    await asyncio.gather(*(inspect_slide(renderer, root, f"slides/{html.name}", "16:9") for html in slides))
                    await export_deck(
                        renderer,
                        root / "slides",
                        "16:9",
                        root / "deck.pdf",
                        png_dir=root / "previews",
                        pptx_path=root / "deck.pptx",
                        workspace=root,
                        deck=deck,
                    )
                finished.append((time.time(), len(slides)))

            cycle = itertools.cycle(decks)
            for root in [copy(next(cycle)) for _ in range(in_flight)]:  # warm-up: pages opened, caches filled
                await replay(root)
            finished.clear()
            await asyncio.gather(*map(replay, [copy(next(cycle)) for _ in range(replays)]))
            times, slides = zip(*finished)
            return steady_window(times, in_flight, cpu, slides)


def steady_span(finishes: int, in_flight: int) -> tuple[int, int]:
    """Indices of the first and last of `finishes` (in finishing order) while `in_flight` were in flight.

    From the in_flight-th finish (the first wave is through) to the last finish before the
    queue runs dry: the drain after it finishes work begun earlier, with nothing new arriving,
    and would flatter the rate (by 3-10% at 32 and 64 here)."""
    first, last = in_flight - 1, finishes - in_flight - 1
    if last <= first:
        raise ValueError(
            f"{finishes} finishes at {in_flight} in flight: too few for a steady window (need at least {2 * in_flight + 1})"
        )
    return first, last


def steady_window(finishes: Sequence[float], in_flight: int, cpu: BusyCPU, renders: Sequence[int] = ()) -> Window:
    """The stretch while `in_flight` were in flight, from the finish times (time.time(), in order)
    of rollouts or decks, and for decks the slides each rendered."""
    first, last = steady_span(len(finishes), in_flight)
    start, end = finishes[first], finishes[last]
    return Window(last - first, end - start, cpu.between(start, end), sum(renders[first + 1 : last + 1]))


def calls_per_rollout(rollouts: Sequence[Rollout]) -> float:
    """Model calls (agent steps) per finished rollout."""
    return statistics.mean(sum(r.steps.values()) for r in rollouts if r.status == RolloutStatus.done)


def measure(
    url: str,
    concurrency: int,
    rollouts: int,
    work: Path,
    cpu: BusyCPU,
    deck: DeckConfig,
    ramp_up_s: float = 0.0,
    jail: str = "bubblewrap",
) -> tuple[list[Rollout], Window, Path]:
    workers = min(2, -(-concurrency // 16))  # the default layout: a worker per 16 rollouts in flight, at most one per CPU
    overrides = [
        f"run.dir={work / f'c{concurrency}'}",
        "tracking=disabled",
        "llm=scripted",
        f"llm.base_url={url}",
        "critic=rules",
        "rollouts.runner=benchmarks.rollout_throughput:PacedRunner",
        f"ray.num_workers={workers}",
        f"ray.rollouts_per_worker={max(1, concurrency // workers)}",
        "ray.num_cpus_per_worker=0.01",
        f"ray.ramp_up_s={ramp_up_s}",
        f"tools.sandbox.jail={'none' if jail == 'none' else 'bubblewrap'}",
        f"render.jail={'bubblewrap' if jail == 'bubblewrap' else 'none'}",
        f"deck.pptx_mode={deck.pptx_mode.value}",
    ]
    store_schema()
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
        ctx = open_run(compose("synthesize", overrides=overrides), job_type="benchmark")
    tasks = [
        Task(
            f"b{i:04d}",
            "manual",
            f"A short talk about topic number {i} for a general audience.",
            "en",
            (),
            Constraints(SLIDES, SLIDES, "16:9", None),
            split="train",
        )
        for i in range(rollouts)
    ]
    (ctx.store.root / "tasks").mkdir(exist_ok=True)
    atomic_write_parquet(tasks, ctx.store.root / "tasks" / "train.parquet", Task)
    run_rollouts(ctx)
    finishes = sorted(p.stat().st_mtime for p in (ctx.store.root / "rollouts").glob(f"*/{RECORD}"))  # each packed at its end
    return read_parquet(ctx.store.root / "rollouts.parquet", Rollout), steady_window(finishes, concurrency, cpu), ctx.store.root


def ideal(model_bound: float, renders_per_s: float, renders_per_rollout: float) -> tuple[float, str]:
    """Rollouts per hour at the lower bound, and which bound it is."""
    render_bound = renders_per_s / renders_per_rollout * 3600
    return min(model_bound, render_bound), "model" if model_bound <= render_bound else "render"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument(
        "--rounds",
        type=float,
        default=4.0,
        help="rollouts per measurement = rounds x concurrency (at least 6); the rate is taken over all but the first and last round",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="measurements per concurrency, each between two of the capacity; pooled"
    )
    parser.add_argument(
        "--pptx-mode",
        choices=[m.value for m in PptxMode],
        default=PptxMode.editable.value,
        help="deck.pptx_mode of the rollouts and capacity decks",
    )
    parser.add_argument(
        "--jail",
        nargs="+",
        default=["bubblewrap"],
        choices=["bubblewrap", "commands", "none"],
        help="what runs jailed, in turn: bubblewrap (commands and Chromium), commands (commands only), none",
    )
    args = parser.parse_args()
    deck = DeckConfig(pptx_mode=PptxMode(args.pptx_mode))
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: need at least one measurement per concurrency")
    init_ray(RayConfig())
    print(
        f"model latency {args.latency * 1000:.0f} ms per call; {os.cpu_count()} CPUs; PPTX {deck.pptx_mode.value}; {args.repeats} measurements per row, between measurements of this machine's render capacity on the rollouts' decks (its speed drifts)"
    )
    print(
        f"{'concurrency':>11} {'jail':>10} {'rollouts':>8} {'calls/r':>7} {'renders/r':>9} {'renders/s':>15} {'wall s':>7} {'r/hour':>8} {'ideal r/h':>9} {'bound':>7} {'of ideal':>8} {'each':>15} {'cpu ms/r':>8} {'/deck':>5} {'busy':>5} {'/cap':>5}"
    )
    try:
        with fake_endpoint(Reply("ok"), args.latency) as url, tempfile.TemporaryDirectory() as tmp, BusyCPU() as cpu:
            pool, _, pool_dir = measure(url, POOL_CONCURRENCY, POOL_DECKS, Path(tmp) / "deck-pool", cpu, deck)
            decks = [workspace_for(pool_dir, r.task_id) for r in pool if r.status == RolloutStatus.done]
            model_s = args.latency * calls_per_rollout(pool)

            def capacity() -> Window:
                return asyncio.run(render_capacity(decks, cpu, deck))

            for c in args.concurrency:
                capacities, played, started = [capacity()], {jail: [] for jail in args.jail}, time.monotonic()
                for repeat in range(args.repeats):
                    for jail in args.jail:
                        rows, window, _ = measure(
                            url,
                            c,
                            max(6, 2 * c + 2, int(args.rounds * c)),
                            Path(tmp) / f"r{repeat}-{jail}",
                            cpu,
                            deck,
                            model_s,
                            jail,
                        )
                        played[jail].append((rows, window, len(capacities) - 1))  # between capacities[i] and [i + 1]
                        capacities.append(capacity())
                wall = time.monotonic() - started
                for jail, runs in played.items():
                    print(_row(c, jail, runs, capacities, args.latency, wall))
    finally:
        ray.shutdown()


def _row(
    c: int, jail: str, runs: list[tuple[list[Rollout], Window, int]], capacities: list[Window], latency: float, wall: float
) -> str:
    """One printed row: the pooled measurements of one concurrency and jail, each against the capacities around it."""
    rows = [r for played, _, _ in runs for r in played]
    windows = [window for _, window, _ in runs]
    done = [r for r in rows if r.status == RolloutStatus.done]
    calls = calls_per_rollout(rows)
    renders = statistics.mean(r.tool_counts.get("inspect_slide", 0) for r in done)
    model_bound = c * 3600 / (calls * latency)
    speeds = [w.renders / w.seconds for w in capacities]
    each = [w.units * 3600 / w.seconds / ideal(model_bound, (speeds[i] + speeds[i + 1]) / 2, renders)[0] for _, w, i in runs]
    around = sorted({k for _, _, i in runs for k in (i, i + 1)})  # the capacities measured next to this jail's runs
    rate = sum(w.units for w in windows) * 3600 / sum(w.seconds for w in windows)
    best, bound = ideal(model_bound, statistics.mean(speeds[k] for k in around), renders)
    spread = f"{statistics.mean(speeds):.1f} ({min(speeds):.0f}-{max(speeds):.0f})"
    return (
        f"{c:>11} {jail:>10} {len(rows):>8} {calls:>7.1f} {renders:>9.1f} {spread:>15} {wall:>7.1f} {rate:>8.0f} {best:>9.0f} {bound:>7} {rate / best:>8.0%} {'/'.join(f'{e:.0%}' for e in each):>15}"
        f" {cpu_ms_per_unit(windows):>8.0f} {cpu_ms_per_unit(capacities):>5.0f} {busy(windows):>5.0%} {busy(capacities):>5.0%}"
    )


if __name__ == "__main__":
    main()
