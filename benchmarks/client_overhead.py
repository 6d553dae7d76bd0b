"""Model-client overhead against the fake OpenAI server at 0 ms latency.

    python -m benchmarks.client_overhead [--calls 400]

The server runs in its own process (so it does not share our GIL). For each call
we time `ModelClient.chat()` end to end and the HTTP request inside it; overhead =
the difference (message conversion, retry wrapper, semaphore, parsing, metering). The
calls run inside a unit (core.run.metering), as a rollout's do: they count into its meter.
A bare `openai` SDK call to the same server is timed too, for reference (the client
speaks JSON over aiohttp itself: the SDK's request pipeline costs more per call).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import openai

from benchmarks.endpoint import fake_endpoint
from benchmarks.endpoint import percentile as _pct
from core.config import LLMConfig
from core.llm.client import ModelClient
from core.llm.conversation import DEFAULT_PROFILE, profile_named
from core.llm.wire import to_wire
from core.records import Message, ToolCall
from core.run.metering import Unit, unit_scope
from fakes.openai_server import Reply

CONVERSATION = [
    Message("system", "You are a presentation designer. " * 50),
    Message("user", "Make a deck about numerical analysis."),
    Message("assistant", "", reasoning="plan", tool_calls=(ToolCall("c1", "read_file", '{"path": "manuscript.md"}'),)),
    Message("tool", "# Slide 1\n" * 200, tool_call_id="c1", name="read_file"),
]


REPLY = Reply("", [("write_file", {"path": "slides/slide_01.html", "content": "<html></html>"})], reasoning="ok")


async def _ours(url: str, calls: int, concurrency: int) -> tuple[list[float], list[float]]:
    client = ModelClient(LLMConfig(base_url=url, model="fake", max_concurrency=concurrency), "agent")
    totals: list[float] = []
    overheads: list[float] = []
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            started = time.perf_counter()
            result = await client.chat(CONVERSATION, tools=[])
            total = time.perf_counter() - started
            totals.append(total)
            overheads.append(total - result.latency_s)

    with unit_scope(Unit()):
        await asyncio.gather(*(one() for _ in range(calls)))
    await client.aclose()
    return totals, overheads


async def _bare(url: str, calls: int, concurrency: int) -> list[float]:
    api = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    wire = to_wire(CONVERSATION, None, profile_named(DEFAULT_PROFILE))  # the messages the client sends
    totals: list[float] = []
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            started = time.perf_counter()
            await api.chat.completions.create(model="fake", messages=wire, tools=[])
            totals.append(time.perf_counter() - started)

    await asyncio.gather(*(one() for _ in range(calls)))
    await api.close()
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    with fake_endpoint(REPLY) as url:
        asyncio.run(_ours(url, 50, 8))  # warm-up
        print(
            f"{'concurrency':>11} {'bare SDK median':>16} {'ours median':>12} {'ours p95':>9} {'overhead median':>16} {'overhead p95':>13}"
        )
        for concurrency in (1, 64):
            bare = asyncio.run(_bare(url, args.calls, concurrency))
            totals, overheads = asyncio.run(_ours(url, args.calls, concurrency))
            ms = lambda v: f"{v * 1000:.2f} ms"  # noqa: E731
            print(
                f"{concurrency:>11} {ms(statistics.median(bare)):>16} {ms(statistics.median(totals)):>12} "
                f"{ms(_pct(totals, 0.95)):>9} {ms(statistics.median(overheads)):>16} {ms(_pct(overheads, 0.95)):>13}"
            )


if __name__ == "__main__":
    main()
