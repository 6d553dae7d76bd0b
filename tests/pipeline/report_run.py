"""Synthetic run directories for the report: records and workspaces that look like a real run's.

`write_rollout` writes one rollout's workspace (slide previews and renders, deck_defects.json,
a researcher and a presenter trajectory, optionally with a critic injection and a
context-budget warning) and returns its Rollout record; `build_run` makes a whole run
(config, tasks, rollout units and Parquet views, verdicts, a stage record, SFT files).
Slide images are a few distinct PNGs at real slide size, written as bytes.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from PIL import Image, ImageDraw

from agents.budget import CONTEXT_WARNING
from core.records import (
    Constraints,
    CriticInjection,
    Message,
    Rollout,
    StageDone,
    Step,
    Task,
    ToolCall,
    Trajectory,
    Usage,
    Verdict,
    read_parquet,
)
from core.run.store import RunStore, atomic_write_parquet, atomic_write_text
from core.run.usage import RoleUsage

SIZES = {"16:9": (1280, 720), "4:3": (960, 720)}
PALETTE = ((37, 99, 235), (22, 163, 74), (192, 57, 43), (124, 58, 237), (234, 88, 12), (15, 118, 110))
INJECTED_FINDING = {
    "category": "layout",
    "severity": "critical",
    "evidence": "overflow at h1.title: the title runs past the right edge",
    "fix": "shrink or split the content so every element fits inside the slide box",
}
GATES = ("constraint", "consistency", "quality")
ROLLOUT_COST, JUDGE_COST = 0.0125, 0.001  # what each rollout's and each judge verdict's calls cost, as their usage says


@cache
def slide_png(aspect: str, variant: int) -> bytes:
    """A slide-sized PNG: a title bar, text lines and a figure block, coloured by `variant`."""
    width, height = SIZES[aspect]
    image = Image.new("RGB", (width, height), (250, 250, 252))
    draw = ImageDraw.Draw(image)
    colour = PALETTE[variant % len(PALETTE)]
    draw.rectangle((0, 0, width, height // 6), fill=colour)
    for line in range(5):
        top = height // 4 + line * height // 12
        draw.rectangle((width // 16, top, width // 2, top + height // 30), fill=(60, 60, 70))
    draw.rectangle((width * 9 // 16, height // 4, width * 15 // 16, height * 7 // 8), fill=tuple(c // 2 for c in colour))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@dataclass(frozen=True)
class RolloutSpec:
    slides: int = 4
    injected: bool = False  # a critic injection after inspecting slide 1, then the fix
    warned: bool = False  # a context-budget warning on the last observation
    failure: str | None = None  # a failed rollout (no deck)


def make_task(
    task_id: str, source: str = "persona", language: str = "en", aspect: str = "16:9", slides: int | None = None
) -> Task:
    return Task(
        task_id=task_id,
        source=source,
        instruction=f"Make a short deck about <b>tides</b> & the moon for task {task_id}.",
        language=language,
        constraints=Constraints(slides_min=slides, slides_max=slides, aspect_ratio=aspect, language=language),
        provenance={"writer": "synthetic"},
        split="train",
    )


class _Trajectory:
    """Builds a trajectory step by step: a model turn (reasoning + tool call) and its observation."""

    def __init__(self, task_id: str, agent: str):
        self.task_id, self.agent = task_id, agent
        self.messages = [
            Message("system", f"You are the {agent}.", kind="prompt"),
            Message("user", "Make the deck.", kind="prompt"),
        ]
        self.steps: list[Step] = []
        self.injections: list[CriticInjection] = []

    def step(self, reasoning: str, tool: str, result: str, images: tuple[str, ...] = (), **arguments: object) -> None:
        call = ToolCall(f"call_{len(self.steps)}", tool, json.dumps(arguments, ensure_ascii=False))
        self.messages.append(Message("assistant", reasoning=reasoning, tool_calls=(call,)))
        self.messages.append(Message("tool", result, images, tool_call_id=call.id, name=tool, kind="tool"))
        size = sum(len(m.content) for m in self.messages) // 4
        self.steps.append(
            Step(len(self.steps), 1.7e9 + len(self.steps), 0.5, 0.2, Usage(size, 40 + len(reasoning) // 4), (tool,))
        )

    def inject(self, artifact: str, image: str) -> None:
        thought = f"The inspection of {artifact} shows 1 problem(s).\n- [layout/critical] {INJECTED_FINDING['evidence']}"
        index = len(self.messages)
        ref = f"inspect_slide:{artifact}:{image}"
        self.injections.append(
            CriticInjection(len(self.steps) - 1, index, "scripted-critic", json.dumps([INJECTED_FINDING]), ref)
        )
        call = ToolCall(f"critic_{index}", "thinking", json.dumps({"thought": thought}))
        self.messages.append(Message("assistant", tool_calls=(call,), kind="critic"))
        self.messages.append(Message("tool", thought, tool_call_id=call.id, name="thinking", kind="critic"))

    def build(self, status: str = "finalized", failure: str | None = None) -> Trajectory:
        return Trajectory(
            task_id=self.task_id,
            agent=self.agent,
            model="scripted-policy",
            policy="scripted",
            messages=tuple(self.messages),
            steps=tuple(self.steps),
            injections=tuple(self.injections),
            status=status,
            failure=failure,
            outcome=None if failure else "done",
        )


def write_rollout(root: Path, task: Task, spec: RolloutSpec) -> Rollout:
    """Write the rollout's workspace under root/rollouts/<task_id> and return its record."""
    folder = Path("rollouts") / task.task_id
    ws = root / folder
    aspect = task.constraints.aspect_ratio or "16:9"
    researcher = _Trajectory(task.task_id, "researcher")
    researcher.step(
        "Searching the corpus.", "search_web", "Results for 'tides':\n1. Tides <script>alert(1)</script>", query="tides"
    )
    researcher.step(
        "Writing the manuscript.",
        "write_file",
        "Wrote the manuscript.",
        path="manuscript.md",
        content="# Tides\n\n---\n\n# The moon\n",
    )
    artifacts = {"trajectory:researcher": f"{folder}/trajectory_researcher.json"}
    if spec.failure:
        _save(ws, researcher.build("failed", spec.failure), artifacts)
        return Rollout(
            task_id=task.task_id,
            status="failed",
            failure=spec.failure,
            artifacts=artifacts,
            steps={"researcher": 2},
            estimated_tokens={"researcher": Usage(800, 90)},
            wall_s=30.0,
            policy="scripted",
        )
    presenter = _Trajectory(task.task_id, "presenter")
    slides = []
    for n in range(1, spec.slides + 1):
        html, png = f"slides/slide_{n:02d}.html", f"slide_{n:02d}.png"
        source = f"<!doctype html>\n<h1>Slide {n}</h1>\n" + "<p>tides and the moon</p>\n" * 20
        presenter.step(f"Writing slide {n}.", "write_file", f"Wrote {html}.", path=html, content=source)
        _write(ws / html, source.encode())
        _write(ws / "renders" / png, slide_png(aspect, n))
        presenter.step(
            f"Inspecting slide {n}.", "inspect_slide", "Rendered; the image is attached.", (f"renders/{png}",), html_file=html
        )
        if n == 1 and spec.injected:
            presenter.inject(html, f"renders/{png}")
            presenter.step(
                "Fixing the title.", "write_file", f"Wrote {html}.", path=html, content="<h1 style='font-size:40px'>Slide 1</h1>"
            )
        _write(ws / "previews" / png, slide_png(aspect, n + 1))
        defects = (
            [{"code": "low_contrast", "severity": "major", "element": "p.note", "detail": "contrast 2.1:1"}] if n == 2 else []
        )
        kept = {
            "words": 40,
            "words_kept": 0.975,
            "displacement_px": {"median": 0.4, "max": 2.5},
            "line_count_changed": 0,
            "ssim": 0.99,
        }
        slides.append({"file": html, "png": f"previews/{png}", "defects": defects, "pptx": kept})
    if spec.warned:
        last = presenter.messages[-1]
        warning = CONTEXT_WARNING.format(used=41000, window=50000, percent=82, remaining=9000)
        presenter.messages[-1] = Message(
            "tool", last.content + warning, last.images, tool_call_id=last.tool_call_id, name=last.name, kind="tool"
        )
    presenter.step("Done.", "finalize", "Finalized.", outcome="slides")
    fidelity = {
        "renderer": "LibreOffice 7.4.7.2",
        "seconds": 4.2,
        "deck": {
            "slides": spec.slides,
            "words": 40 * spec.slides,
            "words_kept": 0.975,
            "displacement_px": {"median": 0.4, "max": 2.5},
            "line_count_changed": 0,
            "ssim": 0.99,
            "tables": 1,
            "pictures": 2,
            "within_targets": True,
        },
    }
    pptx = {"mode": "editable", "fidelity": fidelity}
    _write(ws / "deck_defects.json", json.dumps({"aspect": aspect, "slides": slides, "pptx": pptx}).encode())
    artifacts |= {
        "trajectory:presenter": f"{folder}/trajectory_presenter.json",
        "defects": f"{folder}/deck_defects.json",
        "previews": f"{folder}/previews",
    }
    _save(ws, presenter.build(), artifacts)
    _save(ws, researcher.build(), artifacts)
    trajectories = (researcher, presenter)
    prompt, completion = (
        sum(getattr(s.usage, k) for t in trajectories for s in t.steps) for k in ("prompt_tokens", "completion_tokens")
    )
    return Rollout(
        task_id=task.task_id,
        status="done",
        artifacts=artifacts,
        steps={t.agent: len(t.steps) for t in trajectories},
        tool_counts={"write_file": spec.slides + 1, "inspect_slide": spec.slides},
        injections=len(presenter.injections),
        findings={"layout": 1} if spec.injected else {},
        estimated_tokens={t.agent: sum((s.usage for s in t.steps), Usage()) for t in trajectories},
        wall_s=60.0 + 10 * spec.slides,
        policy="scripted",
        usage={
            "agent": RoleUsage(
                calls=sum(len(t.steps) for t in trajectories),
                prompt_tokens=prompt,
                completion_tokens=completion,
                cost_usd=ROLLOUT_COST,
                latency_s=1.5,
            )
        },
    )


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _save(ws: Path, trajectory: Trajectory, artifacts: dict[str, str]) -> None:
    _write(ws / Path(artifacts[f"trajectory:{trajectory.agent}"]).name, trajectory.to_json().encode())


def verdicts_for(rollout: Rollout, rng: random.Random) -> list[Verdict]:
    """One environment verdict for a failed rollout; else one per gate, about one in four rejected."""
    if rollout.status != "done":
        return [Verdict(rollout.task_id, "environment", False, "environment", 0.0, (rollout.failure or "failed",))]
    failing = rng.choice([*GATES, None, None, None, None, None, None, None, None])
    return [_gate_verdict(rollout.task_id, gate, passed=gate != failing) for gate in GATES]


def _gate_verdict(task_id: str, gate: str, passed: bool) -> Verdict:
    usage = (
        {}
        if gate == "constraint"
        else {"judge": RoleUsage(calls=1, prompt_tokens=900, completion_tokens=60, cost_usd=JUDGE_COST)}
    )
    if passed:
        return Verdict(task_id, gate, True, None, 1.0, usage=usage)
    return Verdict(task_id, gate, False, gate, 0.0, (f"{gate} failed: <slide 3> & more",), usage=usage)


def add_rollout(root: Path, task: Task, spec: RolloutSpec) -> Rollout:
    """Add one rollout (and its task) to an existing run, as the stages would have written it."""
    store = RunStore(root)
    rollout = write_rollout(root, task, spec)
    store.commit("rollouts", task.task_id, rollout)
    store.compact("rollouts", Rollout)
    tasks_file = root / "tasks" / "train.parquet"
    atomic_write_parquet([*read_parquet(tasks_file, Task), task], tasks_file, Task)
    if (root / "verdicts.parquet").exists():
        for verdict in verdicts_for(rollout, random.Random(0)):
            store.commit("verdicts", f"{verdict.task_id}__{verdict.gate}", verdict)
        store.compact("verdicts", Verdict)
    return rollout


def build_run(root: Path, rollouts: int, seed: int = 0) -> None:
    """A whole synthetic run of `rollouts` rollouts (about 3-12 slides each; some failed, injected or warned)."""
    rng = random.Random(seed)
    config = {"run": {"name": root.name}, "filters": {"gates": list(GATES)}, "rollouts": {"split": "train"}}
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(root / "config.yaml", yaml.safe_dump(config))
    atomic_write_text(root / "config.hash", "synthetic0000000\n")
    store = RunStore(root)
    tasks, records = [], []
    for i in range(rollouts):
        source, language = rng.choice(["persona", "arxiv", "finepdfs"]), rng.choice(["en", "zh"])
        task = make_task(f"{source}-{i:05d}", source, language, rng.choice(list(SIZES)), rng.choice([None, 6, 12]))
        spec = RolloutSpec(
            slides=rng.randint(3, 12),
            injected=rng.random() < 0.3,
            warned=rng.random() < 0.1,
            failure="environment/timeout" if rng.random() < 0.1 else None,
        )
        tasks.append(task)
        records.append(write_rollout(root, task, spec))
        store.commit("rollouts", task.task_id, records[-1])
        for verdict in verdicts_for(records[-1], rng):
            store.commit("verdicts", f"{verdict.task_id}__{verdict.gate}", verdict)
    (root / "tasks").mkdir(exist_ok=True)
    atomic_write_parquet(tasks, root / "tasks" / "train.parquet", Task)
    atomic_write_parquet([], root / "tasks" / "eval.parquet", Task)
    store.compact("rollouts", Rollout)
    store.compact("verdicts", Verdict)
    store.commit("stages", "tasks", StageDone(stage="tasks", figures_json=json.dumps({"written": rollouts, "train": rollouts})))
    (root / "sft").mkdir(exist_ok=True)
    atomic_write_text(root / "sft" / "train.jsonl", '{"messages": []}\n' * (rollouts // 2))
    atomic_write_text(root / "sft" / "val.jsonl", '{"messages": []}\n' * (rollouts // 20))
