"""Synthetic run directories that follow docs/architecture.md, for the export tests and benchmarks.

Each task gets a workspace with rendered slides, a researcher and a presenter
trajectory (reasoning, parallel tool calls, slide images inside tool results, critic
injections, a literal `<image>` in a tool result), a Rollout record pointing at them
and one Verdict per gate. Task 0 of every `rejected_every` is rejected by the quality
gate; `failed` extra tasks end with a failed rollout.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from core.records import CriticInjection, Message, ModelUse, Origin, Rollout, Task, ToolCall, Trajectory, Verdict, write_parquet
from core.run.store import RunStore
from core.run.usage import RoleUsage

TOOLS = {
    "researcher": ["search", "fetch_url", "write_file", "inspect_manuscript", "thinking", "finalize"],
    "presenter": ["read_file", "write_file", "inspect_slide", "thinking", "finalize"],
}
WORDS = (
    "slide",
    "layout",
    "contrast",
    "figure",
    "revenue",
    "growth",
    "研究",
    "数据",
    "chart",
    "table",
    "the",
    "of",
    "and",
    "design",
    "title",
    "text",
    "audience",
    "summary",
    "method",
    "result",
    "conclusion",
)
CRITIC_THOUGHT = "The title overlaps the chart; move it up."
GATES = ("constraint", "consistency", "quality")
ROLLOUT_COST = 0.01  # what each finished rollout's calls cost, as its unit's usage says
MADE_BY = {
    "researcher": Origin(
        {"agents/roles/prompts/researcher.en.j2": "aaaaaaaaaaaa"}, {"agent": ModelUse("test-model", "openai", 0.7, 0.95, 8192)}
    ),
    "presenter": Origin(
        {"agents/roles/prompts/presenter.en.j2": "bbbbbbbbbbbb"}, {"agent": ModelUse("test-model", "openai", 0.7, 0.95, 8192)}
    ),
}


@dataclass(frozen=True)
class RunShape:
    tasks: int = 4
    failed: int = 1  # extra tasks whose rollout failed
    rejected_every: int = 4  # task i with i % rejected_every == rejected_every - 1 fails the quality gate
    steps: int = 3  # work steps per agent (each: reasoning + two parallel tool calls + observations + a critic injection)
    steps_max: int | None = None  # when set, each trajectory draws its steps from [steps, steps_max]
    observation_chars: int = 400
    slide_size: tuple[int, int] = (320, 180)
    verdicts: bool = True
    reasoning: bool = True  # the agents' turns carry reasoning (a presenter's is then split where an inspection hides it)
    eval_tasks: int = 0  # extra accepted rollouts whose task is in the eval split
    seed: int = 0


def schema(name: str) -> dict:
    props = {"thinking": {"thought": {"type": "string"}}, "finalize": {"outcome": {"type": "string"}}}.get(
        name, {"path": {"type": "string"}, "query": {"type": "string", "default": ""}}
    )
    return {
        "type": "function",
        "function": {"name": name, "description": f"The {name} tool.", "parameters": {"type": "object", "properties": props}},
    }


def text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def call(i: int, name: str, **arguments: str) -> ToolCall:
    return ToolCall(f"call_{i}_{name}", name, json.dumps(arguments, ensure_ascii=False))


def trajectory(task_id: str, agent: str, workspace: Path, shape: RunShape, rng: random.Random) -> Trajectory:
    msgs = [
        Message("system", f"You are the {agent}.", kind="prompt"),
        Message("user", f"Make a deck for {task_id}.", kind="prompt"),
    ]
    injections = []
    steps = rng.randint(shape.steps, shape.steps_max) if shape.steps_max else shape.steps
    for step in range(steps):
        slide = f"renders/slide_{step + 1:02d}.png"
        Image.new("RGB", shape.slide_size, (rng.randrange(256), 40, 90)).save(workspace / slide)
        calls = (
            call(step, "write_file", path=f"slides/slide_{step + 1:02d}.html"),
            call(step, "inspect_slide" if agent == "presenter" else "inspect_manuscript", path="manuscript.md"),
        )
        content, reasoning = text(rng, 60), text(rng, 120)  # drawn either way, in this order: the same run otherwise
        msgs.append(Message("assistant", content, reasoning=reasoning if shape.reasoning else None, tool_calls=calls))
        msgs.append(
            Message(
                "tool",
                text(rng, shape.observation_chars) + " <image> literal",
                tool_call_id=calls[0].id,
                name=calls[0].name,
                kind="tool",
            )
        )
        images = (slide,) if agent == "presenter" else ()
        msgs.append(
            Message("tool", text(rng, shape.observation_chars), images, tool_call_id=calls[1].id, name=calls[1].name, kind="tool")
        )
        critic_call = ToolCall(f"critic_{len(msgs)}", "thinking", json.dumps({"thought": CRITIC_THOUGHT}))
        injections.append(CriticInjection(step, len(msgs), "critic-vlm", "[]", f"inspect_slide:{slide}"))
        msgs.append(Message("assistant", tool_calls=(critic_call,), kind="critic"))
        msgs.append(Message("tool", CRITIC_THOUGHT, tool_call_id=critic_call.id, name="thinking", kind="critic"))
    done = call(steps, "finalize", outcome="manuscript.md" if agent == "researcher" else "slides")
    msgs.append(Message("assistant", "", reasoning="All slides are fixed." if shape.reasoning else None, tool_calls=(done,)))
    msgs.append(Message("tool", "Finalized.", tool_call_id=done.id, name="finalize", kind="tool"))
    return Trajectory(
        task_id=task_id,
        agent=agent,
        model="test-model",
        messages=tuple(msgs),
        injections=tuple(injections),
        tools_json=json.dumps([schema(n) for n in TOOLS[agent]]),
        status="finalized",
        outcome="slides",
        origin=MADE_BY[agent],
    )


def steps_of(shape: RunShape) -> int:
    return shape.steps_max or shape.steps


def build_run(root: Path, shape: RunShape = RunShape()) -> Path:
    """Write a synthetic run directory at `root`; returns it."""
    rng = random.Random(shape.seed)
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(
        f"run:\n  name: synthetic\nllm:\n  model: test-model\nfilters:\n  gates: [{', '.join(GATES)}]\n", encoding="utf-8"
    )
    (root / "config.hash").write_text("0123456789abcdef\n")
    tasks, rollouts, verdicts = [], [], []
    total = shape.tasks + shape.failed + shape.eval_tasks
    for i in range(total):
        task_id = f"task-{i:04d}"
        split = "eval" if i >= shape.tasks + shape.failed else "train"
        source = ("persona", "arxiv", "finepdfs")[i % 3]
        licence = {"persona": "CC-BY-NC-SA-4.0", "arxiv": "CC-BY-4.0", "finepdfs": "ODC-By-1.0"}[source]
        tasks.append(
            Task(
                task_id=task_id,
                source=source,
                instruction=f"Deck {i}",
                language="en" if i % 2 else "zh",
                provenance={"id": f"{source}-{i}", "licence": licence},
                split=split,
            )
        )
        workspace = root / "rollouts" / task_id
        (workspace / "renders").mkdir(parents=True, exist_ok=True)
        if shape.tasks <= i < shape.tasks + shape.failed:
            rollouts.append(Rollout(task_id=task_id, status="failed", failure="environment/timeout"))
            RunStore(root).commit("rollouts", task_id, rollouts[-1])
            continue
        artifacts, injections = {}, 0
        for agent in ("researcher", "presenter"):
            path = workspace / f"trajectory_{agent}.json"
            record = trajectory(task_id, agent, workspace, shape, rng)
            path.write_text(record.to_json(), encoding="utf-8")
            artifacts[f"trajectory:{agent}"] = path.relative_to(root).as_posix()
            injections += len(record.injections)
        rollouts.append(
            Rollout(
                task_id=task_id,
                status="done",
                artifacts=artifacts,
                injections=injections,
                usage={"agent": RoleUsage(calls=2 * steps_of(shape), cost_usd=ROLLOUT_COST)},
            )
        )
        RunStore(root).commit("rollouts", task_id, rollouts[-1])
        rejected = i % shape.rejected_every == shape.rejected_every - 1
        for gate in GATES:
            passed = not (rejected and gate == "quality")
            verdicts.append(Verdict(task_id=task_id, gate=gate, passed=passed, category=None if passed else "quality"))
    write_parquet([t for t in tasks if t.split == "train"], root / "tasks" / "train.parquet", Task)
    write_parquet([t for t in tasks if t.split == "eval"], root / "tasks" / "eval.parquet", Task)
    write_parquet(rollouts, root / "rollouts.parquet", Rollout)
    if shape.verdicts:
        write_parquet(verdicts, root / "verdicts.parquet", Verdict)
    return root
