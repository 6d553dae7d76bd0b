"""Synthetic run directories for the filter tests: tasks, rollouts, workspaces and trajectories.

A `Spec` describes one rollout: its task's constraints, its slides (HTML, written to the
workspace as the agent's last write left them) and the trajectory that wrote them, with
critic injections. `build_workspace` writes the workspace; the deck itself comes either
from the real exporter (`export_real`, Chromium) or from PyMuPDF (`export_fake`, no browser).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import yaml
from PIL import Image

from core.records import Constraints, CriticInjection, Message, Rollout, Task, ToolCall, Trajectory, write_parquet
from core.seams.candidate import Candidate
from fakes.decks import PAGE_SIZES, write_deck
from core.run.reader import RunReader

SIZES_PX = {"16:9": (1280, 720), "4:3": (960, 720), "A1": (2244, 3178)}
TITLE_FIX = ("font-size:160px", "font-size:48px")  # the edit that answers an overflowing-title finding


def slide_html(
    aspect: str, lang: str, number: int, title: str, body: str, *, title_style: str = TITLE_FIX[1], image: str | None = None
) -> str:
    width, height = SIZES_PX[aspect]
    scale = width / 1280
    picture = (
        f'\n<img class="hero" src="{image}" style="width:{int(200 * scale)}px;height:{int(120 * scale)}px">' if image else ""
    )
    return (
        f'<!doctype html>\n<html lang="{lang}">\n<head><meta charset="utf-8"><style>\n'
        f"body {{ margin: 0; }}\n"
        f".slide {{ width: {width}px; height: {height}px; padding: {int(60 * scale)}px; box-sizing: border-box; "
        f"font-family: 'Noto Sans CJK SC', sans-serif; background: #ffffff; color: #1a1a1a; overflow: hidden; }}\n"
        f".body {{ font-size: {int(28 * scale)}px; line-height: 1.4; }}\n"
        f'</style></head>\n<body><div class="slide">\n'
        f'<h1 class="title" style="{title_style}">{number}. {title}</h1>\n'
        f'<p class="body">{body}</p>{picture}\n'
        f"</div></body>\n</html>\n"
    )


class TrajectoryBuilder:
    """A presenter trajectory: tool calls with their results, and critic injections."""

    def __init__(self, task_id: str, agent: str = "presenter"):
        self.task_id, self.agent = task_id, agent
        self.messages: list[Message] = [
            Message("system", "You are the presenter.", kind="prompt"),
            Message("user", "Make the slides.", kind="prompt"),
        ]
        self.injections: list[CriticInjection] = []
        self.steps = 0

    def call(self, name: str, result: str = "ok", said: str = "", **args: Any) -> TrajectoryBuilder:
        call_id = f"call_{len(self.messages)}"
        self.messages.append(
            Message("assistant", said, tool_calls=(ToolCall(call_id, name, json.dumps(args, ensure_ascii=False)),))
        )
        self.messages.append(Message("tool", result, tool_call_id=call_id, name=name, kind="tool"))
        self.steps += 1
        return self

    def inject(self, artifact: str, findings: Sequence[dict[str, str]], tool: str = "inspect_slide") -> TrajectoryBuilder:
        index = len(self.messages)
        self.injections.append(
            CriticInjection(self.steps - 1, index, "critic-vlm", json.dumps(list(findings)), f"{tool}:{artifact}:renders/x.png")
        )
        thought = "\n".join(f"- [{f['category']}/{f['severity']}] {f['evidence']} -> {f['fix']}" for f in findings)
        call = ToolCall(f"critic_{index}", "thinking", json.dumps({"thought": thought}))
        self.messages += [
            Message("assistant", tool_calls=(call,), kind="critic"),
            Message("tool", thought, tool_call_id=call.id, name="thinking", kind="critic"),
        ]
        return self

    def build(self) -> Trajectory:
        return Trajectory(
            task_id=self.task_id,
            agent=self.agent,
            model="test-agent",
            messages=tuple(self.messages),
            injections=tuple(self.injections),
            status="finalized",
            outcome="done",
        )


def title_finding(slide: int) -> dict[str, str]:
    return {
        "category": "layout",
        "severity": "critical",
        "evidence": f"overflow at h1.title: text extends past the right edge of slide {slide}",
        "fix": "shrink the title font",
    }


@dataclass
class Spec:
    task_id: str
    aspect: str  # 16:9 | 4:3 | A1
    lang: str  # en | zh
    slides: int
    asked_slides: int | None = None  # None: as many as made
    revision: str | None = None  # None: no injection; "fix" | "ignore" | "other": answer to a title finding on slide 1
    broken_image: bool = False  # slide 1 links an image that does not exist
    repeated: bool = False  # every slide says the same thing (the content gate's duplicate_slides)
    status: str = "done"
    failure: str | None = None
    files: tuple[str, ...] = ("pdf", "previews", "defects", "trajectory:presenter")  # artifacts the rollout records
    texts: dict[str, tuple[str, tuple[str, ...]]] = field(
        default_factory=lambda: {
            "en": (
                "Attention in practice",
                (
                    "Transformers weigh every input token; training parallelises across the sequence.",
                    "Multi-head attention lets each head look at a different part of the input.",
                    "Positional encodings tell the model in which order the tokens came.",
                ),
            ),
            "zh": (
                "注意力机制实践",
                (
                    "变换器模型权衡每个输入词元，训练可以在整个序列上并行进行，速度明显提升。",
                    "多头注意力让每个头关注输入的不同部分，从而捕捉多种依赖关系。",
                    "位置编码告诉模型各个词元出现的先后顺序。",
                ),
            ),
        }
    )

    def text(self, number: int) -> tuple[str, str]:
        """Slide `number`'s (title, body): a body of its own, unless the spec repeats itself."""
        title, bodies = self.texts[self.lang]
        return title, bodies[0 if self.repeated else (number - 1) % len(bodies)]

    def task(self) -> Task:
        asked = self.asked_slides or self.slides
        constraints = Constraints(slides_min=asked, slides_max=asked, aspect_ratio=self.aspect, language=self.lang)
        return Task(
            task_id=self.task_id,
            source="manual",
            instruction=f"A deck about attention ({self.aspect}, {self.lang}).",
            language=self.lang,
            constraints=constraints,
            split="train",
        )

    def html(self, number: int, title_style: str = TITLE_FIX[1]) -> str:
        title, body = self.text(number)
        image = "assets/missing.png" if self.broken_image and number == 1 else None
        return slide_html(self.aspect, self.lang, number, title, body, title_style=title_style, image=image)

    def trajectory(self) -> Trajectory:
        """Writes every slide; with a revision, slide 1 starts with an oversized title that the critic flags."""
        t = TrajectoryBuilder(self.task_id)
        first = self.html(1, TITLE_FIX[0]) if self.revision else self.html(1)
        t.call("write_file", "Wrote the file.", path="slides/slide_01.html", content=first)
        t.call(
            "inspect_slide",
            "overflow (critical) h1.title: text extends 380px past the right edge",
            html_file="slides/slide_01.html",
        )
        if self.revision:
            t.inject("slides/slide_01.html", [title_finding(1)])
        if self.revision == "fix":
            t.call(
                "edit_file",
                "Replaced 1 occurrence(s).",
                said="Shrinking the title.",
                path="slides/slide_01.html",
                old_string=TITLE_FIX[0],
                new_string=TITLE_FIX[1],
            )
        elif self.revision == "other":  # touches the slide, not the title
            old = self.text(1)[1]
            t.call(
                "edit_file", "Replaced 1 occurrence(s).", path="slides/slide_01.html", old_string=old, new_string=old + " (2017)"
            )
        for number in range(2, self.slides + 1):
            t.call("write_file", "Wrote the file.", path=f"slides/slide_{number:02d}.html", content=self.html(number))
        t.call("inspect_slide", "No defects measured.", html_file="slides/slide_01.html")
        t.call("finalize", "Finalized.", outcome="done")
        return t.build()

    def final_html(self, number: int) -> str:
        """Slide `number` as the trajectory's writes left it."""
        if number != 1 or self.revision in (None, "fix"):
            return self.html(number)
        body = self.text(1)[1]
        oversized = self.html(1, TITLE_FIX[0])
        return oversized.replace(body, body + " (2017)", 1) if self.revision == "other" else oversized

    def rollout(self) -> Rollout:
        workspace = f"rollouts/{self.task_id}"
        paths = {
            "pdf": f"{workspace}/deck.pdf",
            "previews": f"{workspace}/previews",
            "defects": f"{workspace}/deck_defects.json",
            "slides": f"{workspace}/slides",
        }
        artifacts = {k: paths.get(k) or f"{workspace}/trajectory_{k.partition(':')[2]}.json" for k in self.files}
        return Rollout(
            task_id=self.task_id,
            status=self.status,
            failure=self.failure,
            artifacts=artifacts,
            injections=1 if self.revision else 0,
        )


def build_workspace(root: Path, spec: Spec) -> Path:
    """Slides and trajectory of one rollout; the deck is exported separately."""
    workspace = root / "rollouts" / spec.task_id
    (workspace / "slides").mkdir(parents=True, exist_ok=True)
    for number in range(1, spec.slides + 1):
        (workspace / "slides" / f"slide_{number:02d}.html").write_text(spec.final_html(number), encoding="utf-8")
    (workspace / "trajectory_presenter.json").write_text(spec.trajectory().to_json(), encoding="utf-8")
    return workspace


def write_run(root: Path, specs: Sequence[Spec], config: dict[str, Any] | None = None) -> None:
    """tasks/train.parquet, rollouts.parquet and (if given) config.yaml; workspaces come from build_workspace."""
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    write_parquet([s.task() for s in specs], root / "tasks" / "train.parquet", Task)
    write_parquet([s.rollout() for s in specs], root / "rollouts.parquet", Rollout)
    if config is not None:
        (root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def write_defects(workspace: Path, aspect: str, per_slide: Sequence[Sequence[dict[str, str]]]) -> None:
    slides = [
        {"file": f"slides/slide_{n:02d}.html", "png": f"previews/slide_{n:02d}.png", "defects": list(d)}
        for n, d in enumerate(per_slide, start=1)
    ]
    (workspace / "deck_defects.json").write_text(json.dumps({"aspect": aspect, "slides": slides}), encoding="utf-8")


def export_fake(workspace: Path, spec: Spec) -> None:
    """No browser: a PyMuPDF deck of the right page size, grey previews, measured defects as the spec implies."""
    numbers = range(1, spec.slides + 1)
    write_deck(
        workspace / "deck.pdf",
        [PAGE_SIZES[spec.aspect]] * spec.slides,
        [spec.text(n)[1] for n in numbers],
        [f"{n}. {spec.text(n)[0]}" for n in numbers],
    )
    (workspace / "previews").mkdir(exist_ok=True)
    for number in range(1, spec.slides + 1):
        Image.new("RGB", (64, 36), "white").save(workspace / "previews" / f"slide_{number:02d}.png")
    broken = {
        "code": "broken_image",
        "severity": "critical",
        "element": "img.hero",
        "detail": "img assets/missing.png file not found",
    }
    write_defects(workspace, spec.aspect, [[broken] if spec.broken_image and n == 1 else [] for n in range(1, spec.slides + 1)])


async def export_real(specs: Sequence[tuple[Path, Spec]]) -> None:
    """The real exporter (deck.export.export_deck: PDF, previews) and deck_defects.json from what it measured."""
    from render.config import RenderConfig
    from deck.export import export_deck
    from render.renderer import Renderer

    async with Renderer(RenderConfig(max_concurrent=4, max_pages=4, timeout_s=30), roots=[w for w, _ in specs]) as renderer:

        async def one(workspace: Path, spec: Spec) -> None:
            deck = await export_deck(
                renderer, workspace / "slides", spec.aspect, workspace / "deck.pdf", png_dir=workspace / "previews"
            )
            write_defects(workspace, spec.aspect, [[d.to_dict() for d in r.defects] for r in deck.results])

        await asyncio.gather(*(one(w, s) for w, s in specs))


def candidate(root: Path, spec: Spec) -> Candidate:
    """One rollout's Candidate: its workspace written, with a PyMuPDF deck."""
    export_fake(build_workspace(root, spec), spec)
    return Candidate(spec.task(), spec.rollout(), RunReader(root))
