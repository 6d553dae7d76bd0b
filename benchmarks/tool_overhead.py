"""Agent-loop overhead per step: one file-tool call against the fake OpenAI server at 0 ms latency;
and what the jail adds to each command.

    python -m benchmarks.tool_overhead [--rollouts 10] [--steps 40] [--commands 200]

The server runs in its own process. Each step is `Agent.step()`: ask the model
(which always calls read_file on a 3 KB manuscript), run the tool, append the
observation and record the step. Our overhead = step time minus the model's
HTTP round trip as the client measured it (`ChatResult.latency_s`, which
includes building the request: the client speaks JSON over aiohttp); it covers message conversion,
argument validation and the sandboxed read. Saving the trajectory as JSON after
each step (what a `save` callback writing a file costs) is timed apart. Each
rollout starts a fresh agent, so the history grows to `--steps` steps.

Then `execute_command("true")`, called as the model calls it, `--commands` times in a
bubblewrap jail and as many times without (`sandbox.jail=none`), interleaved, in a workspace
of a rollout's size (60 files): the jail's cost per command is the difference (bubblewrap's
namespaces and mounts, the uid switch, the workspace handed over before and tidied after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Sequence

from agents.config import AgentConfig, GuardConfig, SandboxConfig
from agents.loop import Agent
from agents.sandbox import Workspace
from agents.tools import ToolContext
from agents.tools.toolsets import toolset_for
from benchmarks.endpoint import fake_endpoint
from benchmarks.endpoint import percentile as _pct
from core.config import LLMConfig
from core.llm.client import ModelClient
from core.llm.results import ChatResult
from core.records import Message, ToolCall, Trajectory
from fakes.openai_server import Reply

REPLY = Reply("", [("read_file", {"path": "manuscript.md"})], reasoning="Check the manuscript again.")


class Timed:
    """The client, keeping each call's HTTP round trip as it measured it."""

    def __init__(self, inner: ModelClient):
        self.inner = inner
        self.name, self.context_window, self.profile, self.vision = inner.name, inner.context_window, inner.profile, inner.vision
        self.latencies: list[float] = []

    async def chat(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None, image_root: Path | None = None
    ) -> ChatResult:
        result = await self.inner.chat(messages, tools, image_root)
        self.latencies.append(result.latency_s)
        return result


async def _measure(url: str, rollouts: int, steps: int, root: Path) -> tuple[list[float], list[float], list[float]]:
    model = Timed(ModelClient(LLMConfig(base_url=url, model="fake"), "agent"))
    totals: list[float] = []
    saves: list[float] = []
    for n in range(rollouts):
        workspace = root / f"rollout_{n}"
        workspace.mkdir(parents=True)
        (workspace / "manuscript.md").write_text("# Tides\n\nThe moon pulls the sea.\n\n---\n\n" * 80)
        record = workspace / "trajectory.json"
        ctx = ToolContext(Workspace(workspace), "presenter")
        off = GuardConfig(no_tool_call_turns=0, repeated_call_turns=0, cut_turns=0, stall_turns=0)
        config = AgentConfig(max_steps=steps, guards=off)  # the same read every step: what is timed, not a loop to end
        agent = Agent(model, toolset_for("presenter"), ctx, config, f"t{n}")
        agent.start("You make slides. " * 100, "Make a deck about tides.")
        for _ in range(steps):
            started = time.perf_counter()
            await agent.step()
            stepped = time.perf_counter()
            record.write_text(agent.trajectory().to_json())
            totals.append(stepped - started)
            saves.append(time.perf_counter() - stepped)
        assert Trajectory.from_json(record.read_text()).steps[-1].tool_names == ("read_file",)
    await model.inner.aclose()
    overheads = [total - latency for total, latency in zip(totals, model.latencies)]
    return totals, overheads, saves


async def _commands(root: Path, calls: int) -> dict[str, list[float]]:
    """Seconds per `execute_command("true")` by jail, the jails taking turns."""
    for folder in ("slides", "assets", "sources/paper"):
        for n in range(20):
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / f"f{n:02d}.txt").write_text("x" * 2000)
    tools, call = toolset_for("presenter"), ToolCall("c1", "execute_command", json.dumps({"command": "true"}))
    contexts = {jail: ToolContext(Workspace(root, SandboxConfig(jail=jail)), "presenter") for jail in ("bubblewrap", "none")}
    times: dict[str, list[float]] = {jail: [] for jail in contexts}
    for n in range(calls + 5):  # the first 5 of each warm up
        for jail, ctx in contexts.items():
            started = time.perf_counter()
            obs = await tools.call(ctx, call)
            if n >= 5:
                times[jail].append(time.perf_counter() - started)
            assert obs.text.startswith("[exit code 0]"), obs.text
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=10)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--commands", type=int, default=200, help="execute_command calls per jail (0: skip)")
    args = parser.parse_args()
    with fake_endpoint(REPLY) as url:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(_measure(url, 1, 10, Path(tmp) / "warm"))  # warm-up (imports, connections)
        with tempfile.TemporaryDirectory() as tmp:
            totals, overheads, saves = asyncio.run(_measure(url, args.rollouts, args.steps, Path(tmp)))
        ms = lambda v: f"{v * 1000:.2f} ms"  # noqa: E731
        print(f"{len(totals)} steps ({args.rollouts} rollouts x {args.steps}), read_file each, fake server at 0 ms latency")
        print(f"{'':>22} {'median':>10} {'p95':>10}")
        print(f"{'step':>22} {ms(statistics.median(totals)):>10} {ms(_pct(totals, 0.95)):>10}")
        print(f"{'model round trip':>22} {ms(statistics.median([t - o for t, o in zip(totals, overheads)])):>10}")
        print(
            f"{'our overhead per step':>22} {ms(statistics.median(overheads)):>10} {ms(_pct(overheads, 0.95)):>10}  (target < 5 ms)"
        )
        print(f"{'saving the trajectory':>22} {ms(statistics.median(saves)):>10} {ms(_pct(saves, 0.95)):>10}")
    if args.commands:
        with tempfile.TemporaryDirectory() as tmp:
            times = asyncio.run(_commands(Path(tmp), args.commands))
        print(f"\nexecute_command('true'), {args.commands} calls per jail, interleaved, 60-file workspace")
        for jail, values in times.items():
            print(f"{'jail=' + jail:>22} {ms(statistics.median(values)):>10} {ms(_pct(values, 0.95)):>10}")
        jailed, unjailed = times["bubblewrap"], times["none"]
        print(
            f"{'the jail adds':>22} {ms(statistics.median(jailed) - statistics.median(unjailed)):>10} {ms(_pct(jailed, 0.95) - _pct(unjailed, 0.95)):>10}"
        )


if __name__ == "__main__":
    main()
