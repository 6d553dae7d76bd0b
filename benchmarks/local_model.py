"""The local model server (`llm=local`) on this machine: its speed, and our overhead per call against it.

    python -m benchmarks.local_model [--calls 8] [--model-path FILE.gguf]

Starts the server as the entry points do (core.llm.local_server.serving; SmolLM2-135M-Instruct by
default), then times through our ModelClient:
- prompt processing: a ~1,500-token prompt with max_tokens=1 (tokens/s the server reads), each
  call's prompt new to it ("cold"), then the same prompt again (the server's state cache holds it:
  what a conversation's next turn costs);
- generation: a short prompt, 128 new tokens at temperature 0 (tokens/s it writes, prompt time included);
- an agent's first turn: the Researcher's real system prompt and tool schemas, sent as the pipeline
  sends them (configs/llm/local.yaml: tool_choice, max_tokens), so the tools are in the prompt (how
  much of the window they fill, and how long the turn takes);
- our overhead per call: ModelClient.chat's wall time minus the HTTP request inside it, and this
  process's CPU time per call (message conversion, JSON, parsing, metering).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from omegaconf import OmegaConf

from agents.tools.toolsets import toolset_for
from agents.workflow import brief_for, prompts
from core.config import PROJECT_ROOT, LLMConfig
from core.llm.client import ModelClient
from core.llm.local_server import serving
from core.records import Message, Task

PARAGRAPH = "Coral reefs are built by colonies of tiny animals called polyps, which secrete calcium carbonate skeletons. "


def local_group() -> LLMConfig:
    """configs/llm/local.yaml as the pipeline reads it, at temperature 0 and without retries."""
    group = OmegaConf.merge(OmegaConf.structured(LLMConfig), OmegaConf.load(PROJECT_ROOT / "configs" / "llm" / "local.yaml"))
    return replace(OmegaConf.to_object(group), model="bench", temperature=0.0, max_retries=0)


@dataclass
class BenchConfig:
    llm: LLMConfig = field(default_factory=local_group)


@dataclass
class Timed:
    wall_s: list[float] = field(default_factory=list)
    overhead_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)


async def timed_calls(client: ModelClient, messages: Callable[[int], list[Message]], tools: list[dict], calls: int) -> Timed:
    """`calls` calls, the i-th with `messages(i)`."""
    out = Timed()
    for i in range(calls):
        cpu, wall = time.process_time(), time.perf_counter()
        result = await client.chat(messages(i), tools)
        out.wall_s.append(time.perf_counter() - wall)
        out.cpu_s.append(time.process_time() - cpu)
        out.overhead_s.append(out.wall_s[-1] - result.latency_s)
        out.prompt_tokens.append(result.usage.prompt_tokens)
        out.completion_tokens.append(result.usage.completion_tokens)
    return out


def researcher_turn() -> tuple[list[Message], list[dict]]:
    task = Task("bench", "manual", "A short talk on coral reef bleaching for high-school students, 3 slides.", "en")
    system, user = prompts("researcher", brief_for(task, Path("."), ()), True, [])
    return [Message("system", system), Message("user", user)], toolset_for("researcher").schemas()


async def measure(cfg: LLMConfig, calls: int) -> None:
    def client(max_tokens: int) -> ModelClient:
        return ModelClient(replace(cfg, max_tokens=max_tokens), "agent")

    def long_prompt(i: int) -> list[Message]:  # a new document number first: nothing of it is cached
        return [Message("user", f"Document {i}. " + PARAGRAPH * 75 + "\nSummarise this in one word.")]

    researcher = researcher_turn()
    reader, writer, agent = client(1), client(128), client(cfg.max_tokens)
    await reader.chat([Message("user", "Hi")])  # warm-up: the model's weights in memory
    runs = {  # in this order: "cached" re-sends the first cold prompt, which the server's state cache holds
        "prompt, cold (1 new token)": await timed_calls(reader, long_prompt, [], calls),
        "prompt, cached (1 new token)": await timed_calls(reader, lambda i: long_prompt(0), [], calls),
        "generation (128 new tokens)": await timed_calls(
            writer, lambda i: [Message("user", "Write a long story about the sea.")], [], calls
        ),
        "researcher's first turn": await timed_calls(agent, lambda i: researcher[0], researcher[1], max(1, calls // 4)),
    }
    for c in (reader, writer, agent):
        await c.aclose()
    print(
        f"{'call':<30} {'n':>3} {'prompt tok':>10} {'new tok':>8} {'wall s':>7} {'prompt tok/s':>12} {'new tok/s':>9} {'overhead ms':>11} {'our CPU ms':>10}"
    )
    for name, t in runs.items():
        wall = statistics.median(t.wall_s)
        prompt, new = statistics.median(t.prompt_tokens), statistics.median(t.completion_tokens)
        read_rate = f"{prompt / wall:,.0f}" if new <= 1 else "-"
        write_rate = f"{new / wall:,.1f}" if new > 1 else "-"
        print(
            f"{name:<30} {len(t.wall_s):>3} {prompt:>10,.0f} {new:>8,.0f} {wall:>7.2f} {read_rate:>12} {write_rate:>9} "
            f"{1000 * statistics.median(t.overhead_s):>11.2f} {1000 * statistics.median(t.cpu_s):>10.2f}"
        )
    print("overhead: ModelClient.chat's wall time minus its HTTP request; our CPU: this process's CPU time per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--model-path", help="a GGUF file (default: the bundled SmolLM2-135M-Instruct)")
    args = parser.parse_args()
    cfg = BenchConfig()
    cfg.llm.model_path = args.model_path
    with tempfile.TemporaryDirectory() as logs, serving(cfg, Path(logs)) as servers:
        started = time.perf_counter()
        print(f"server: {servers[0].spec.model_path.name}, context {servers[0].spec.context_window}, at {cfg.llm.base_url}")
        asyncio.run(measure(cfg.llm, args.calls))
        print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
