"""A test runner speaking the rollout Runner protocol; what it does is read from the task text.

Words in the instruction: SLOW (sleeps past the wall-clock cap), CRASH (raises), FAIL
(returns a failed rollout), DIE (kills its worker process, once per task). BrokenToolRunner is the
real runner with a bug planted in a tool; FlawedRunner fails a task's extra rollouts on purpose; ChattyRunner makes model calls and nothing else.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import ray

from agents.jail import JailUnavailable
from agents.tools import ToolContext
from agents.tools.toolsets import TOOLS
from core.llm.players import Players
from core.protocols import Play
from core.records import Message, Rollout, Task, replica_of
from core.run.metering import current_unit
from pipeline.runner import DeckRunner


class ScriptedRunner:
    def __init__(self, cfg: Any, run_dir: Path):
        self.cfg = cfg
        self.started = False

    async def start(self) -> None:
        self.started = True

    async def rollout(self, task: Task, workspace: Path) -> Rollout:
        assert self.started
        words = task.instruction.split()
        started = time.time()
        worker_thread = await asyncio.to_thread(lambda: threading.current_thread().name)  # where a CPU-bound step runs
        loop_thread = threading.current_thread().name
        cap = current_unit().max_cost_usd  # rollouts.max_cost_usd: what the rollout's model calls may spend
        (workspace / "trace.txt").write_text(
            f"pid {os.getpid()}\nstarted {started}\nthread {worker_thread}\nloop {loop_thread}\ncap {cap}\n"
            f"gcs {ray.get_runtime_context().gcs_address}\n"
        )
        if "DIE" in words:
            marker = workspace.parents[1] / f"died-{task.task_id}"
            if not marker.exists():
                marker.touch()
                os._exit(1)
        if "CRASH" in words:
            raise RuntimeError("scripted crash")
        await asyncio.sleep(60 if "SLOW" in words else 0.3)
        current_unit().meter.record_call("agent", 100, 10, 0, 0.001, 0.05, False)  # as a model call would count
        if "FAIL" in words:
            return Rollout(task_id=task.task_id, status="failed", failure="environment/model_error:server")
        return Rollout(task_id=task.task_id, status="done")  # its usage is the unit's (stamped by the worker)

    async def close(self) -> None:
        self.started = False


class JaillessRunner(ScriptedRunner):
    """A worker on a node where the commands' jail cannot start: its runner refuses as it starts."""

    async def start(self) -> None:
        raise JailUnavailable("tools.sandbox.jail=bubblewrap: bwrap is not on PATH on this node")


BROKEN: set[Path] = set()  # the workspaces whose write_file raises


class BrokenToolRunner(DeckRunner):
    """The real runner, with a bug planted in one tool: in the first rollout it plays, write_file raises TypeError."""

    async def start(self) -> None:
        await super().start()
        original = TOOLS["write_file"]

        async def write_file(ctx: ToolContext, **arguments: Any) -> Any:
            if ctx.workspace.root.resolve() in BROKEN:
                raise TypeError("planted bug: unsupported operand type(s) for +: 'int' and 'str'")
            return await original.fn(ctx, **arguments)

        TOOLS["write_file"] = replace(original, fn=write_file)

    async def rollout(self, task: Task, workspace: Path) -> Rollout:
        if not BROKEN:
            BROKEN.add(workspace.resolve())
        return await super().rollout(task, workspace)


PLANTED_LINE = "<p>Every slide says this same sentence about nothing in particular.</p>"


class FlawedRunner(DeckRunner):
    """The real runner, failing some rollouts on purpose (rollouts.per_task > 1): a task's first extra rollout (`~1`)
    writes every slide with the same planted sentence, which no fix of the scripted policy removes and the gates
    reject (it is in no manuscript, and repeated on every slide); its second (`~2`) meets a write_file that raises (the rollout fails: a tool
    crash)."""

    async def start(self) -> None:
        await super().start()
        original = TOOLS["write_file"]

        async def write_file(ctx: ToolContext, **arguments: Any) -> Any:
            replica = replica_of(ctx.workspace.root.name)
            if replica == 2:
                raise TypeError("planted bug: unsupported operand type(s) for +: 'int' and 'str'")
            content = arguments.get("content")
            if replica == 1 and str(arguments.get("path", "")).endswith(".html") and isinstance(content, str):
                arguments["content"] = content.replace("</body>", PLANTED_LINE + "</body>")
            return await original.fn(ctx, **arguments)

        TOOLS["write_file"] = replace(original, fn=write_file)


class ChattyRunner:
    """A rollout that is `CHATS` agent turns against the configured endpoint (its fleet), each a growing conversation."""

    CHATS = 4

    def __init__(self, cfg: Any, run_dir: Path):
        self.players = Players(cfg.llm, cfg.roles)
        self.model = self.players.play("agent", Play(lambda client: client, lambda _: None))

    async def start(self) -> None:
        return None

    async def rollout(self, task: Task, workspace: Path) -> Rollout:
        messages = [Message("user", task.instruction)]
        for turn in range(self.CHATS):
            reply = await self.model.chat(messages)
            messages += [Message("assistant", reply.content), Message("user", f"turn {turn} done")]
        return Rollout(task_id=task.task_id, status="done")

    async def close(self) -> None:
        await self.players.aclose()
