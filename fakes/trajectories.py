"""The agents of a synthetic rollout: their trajectories as core.records has them, and the files their calls leave.

`TrajectoryBuilder` writes one agent's conversation turn by turn: tool calls (one or several at once) with their
results, a Step per model turn, critic injections and a context warning. `play` plays a rollout's agents from its
spec (fakes.runs): each first works `RunSpec.steps` turns of a given length (two parallel calls, a rendered image,
the critic's note), then makes its own output when the deck has slides: the researcher searches and writes
manuscript.md; the presenter writes the slides, inspects the first (answering a critic finding on its title when
the spec has a revision: fixed, ignored, or another edit), writes the rest and inspects the first again. A failed
rollout stops after its researcher's work.
"""

from __future__ import annotations

import io
import json
import random
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from PIL import Image, ImageDraw

from agents.budget import CONTEXT_WARNING
from core.records import CriticInjection, Message, ModelUse, Origin, Step, ToolCall, Trajectory, Usage, task_of

if TYPE_CHECKING:
    from fakes.runs import RolloutSpec, RunSpec

TITLE_FIX = ("font-size:160px", "font-size:48px")  # the edit that answers an overflowing-title finding
SLIDE_PX = {"16:9": (1280, 720), "4:3": (960, 720), "A1": (2244, 3178)}
TEXTS = {  # a deck's title and the bodies its slides take in turn, by language
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
SEARCH_RESULT = "Results for 'tides':\n1. Tides <script>alert(1)</script>"  # markup a report must escape
CRITIC_THOUGHT = "The title overlaps the chart; move it up."
OVERFLOW = "overflow (critical) h1.title: text extends 380px past the right edge"
NOTHING_MEASURED = "No defects measured."
FINALIZED = "All slides are fixed."  # the reasoning of the finalize turn
WORDS = (
    *("slide", "layout", "contrast", "figure", "revenue", "growth", "研究", "数据", "chart", "table", "the", "of"),
    *("and", "design", "title", "text", "audience", "summary", "method", "result", "conclusion"),
)
TOOLS = {
    "researcher": ("search", "fetch_url", "write_file", "inspect_manuscript", "thinking", "finalize"),
    "presenter": ("read_file", "write_file", "inspect_slide", "thinking", "finalize"),
}
TEMPLATES = {
    "researcher": ("agents/roles/prompts/researcher.en.j2", "aaaaaaaaaaaa"),
    "presenter": ("agents/roles/prompts/presenter.en.j2", "bbbbbbbbbbbb"),
}
OUTCOMES = {"researcher": "manuscript.md", "presenter": "slides"}
AGENTS = ("researcher", "presenter")


def title_finding(slide: int) -> dict[str, str]:
    """The critic's finding on an overflowing title, as an injection's findings_json lists it."""
    return {
        "category": "layout",
        "severity": "critical",
        "evidence": f"overflow at h1.title: text extends past the right edge of slide {slide}",
        "fix": "shrink the title font",
    }


def slide_text(spec: RolloutSpec, number: int) -> tuple[str, str]:
    """Slide `number`'s (title, body): a body of its own, unless the spec repeats itself."""
    title, bodies = TEXTS[spec.language]
    return title, bodies[0 if spec.repeated else (number - 1) % len(bodies)]


def slide_html(spec: RolloutSpec, number: int, title_style: str = TITLE_FIX[1]) -> str:
    """Slide `number` as the presenter writes it: a real page of the spec's aspect ratio and language."""
    width, height = SLIDE_PX[spec.aspect]
    scale = width / 1280
    title, body = slide_text(spec, number)
    picture = (
        f'\n<img class="hero" src="assets/missing.png" style="width:{int(200 * scale)}px;height:{int(120 * scale)}px">'
        if spec.broken_image and number == 1
        else ""
    )
    return (
        f'<!doctype html>\n<html lang="{spec.language}">\n<head><meta charset="utf-8"><style>\n'
        f"body {{ margin: 0; }}\n"
        f".slide {{ width: {width}px; height: {height}px; padding: {int(60 * scale)}px; box-sizing: border-box; "
        f"font-family: 'Noto Sans CJK SC', sans-serif; background: #ffffff; color: #1a1a1a; overflow: hidden; }}\n"
        f".body {{ font-size: {int(28 * scale)}px; line-height: 1.4; }}\n"
        f'</style></head>\n<body><div class="slide">\n'
        f'<h1 class="title" style="{title_style}">{number}. {title}</h1>\n'
        f'<p class="body">{body}</p>{picture}\n'
        f"</div></body>\n</html>\n"
    )


def final_html(spec: RolloutSpec, number: int) -> str:
    """Slide `number` as the presenter's writes left it."""
    if number != 1 or spec.revision in (None, "fix"):
        return slide_html(spec, number)
    body = slide_text(spec, 1)[1]
    oversized = slide_html(spec, 1, TITLE_FIX[0])
    return oversized.replace(body, body + " (2017)", 1) if spec.revision == "other" else oversized


@lru_cache(maxsize=1024)
def slide_png(size: tuple[int, int], variant: int) -> bytes:
    """A slide-like PNG of `size`: a title bar, text lines and a figure block, coloured by `variant`."""
    width, height = size
    image = Image.new("RGB", size, (250, 250, 252))
    draw = ImageDraw.Draw(image)
    colour = ((37 + 47 * variant) % 256, (99 + 89 * variant) % 256, (235 + 131 * variant) % 256)
    draw.rectangle((0, 0, width, height // 6), fill=colour)
    for line in range(5):
        top = height // 4 + line * height // 12
        draw.rectangle((width // 16, top, width // 2, top + height // 30), fill=(60, 60, 70))
    draw.rectangle((width * 9 // 16, height // 4, width * 15 // 16, height * 7 // 8), fill=tuple(c // 2 for c in colour))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def save(path: Path, data: bytes | str) -> None:
    """Write `data` (text as UTF-8) at `path`, its folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


class TrajectoryBuilder:
    """One agent's conversation, turn by turn: tool calls with their results, critic injections, a warning."""

    def __init__(self, task_id: str, agent: str = "presenter"):
        self.task_id, self.agent = task_id, agent
        self.messages: list[Message] = [
            Message("system", f"You are the {agent}.", kind="prompt"),
            Message("user", f"Make a deck for {task_of(task_id)}.", kind="prompt"),  # a task's rollouts share it
        ]
        self.steps: list[Step] = []
        self.injections: list[CriticInjection] = []

    def turn(
        self,
        calls: Sequence[tuple[str, dict[str, Any]]],
        results: Sequence[tuple[str, tuple[str, ...]]],
        said: str = "",
        reasoning: str | None = None,
    ) -> TrajectoryBuilder:
        """A model turn making `calls` at once, each answered by its (text, images) result."""
        index = len(self.messages)
        tool_calls = tuple(
            ToolCall(f"call_{index}_{k}", name, json.dumps(args, ensure_ascii=False)) for k, (name, args) in enumerate(calls)
        )
        self.messages.append(Message("assistant", said, reasoning=reasoning, tool_calls=tool_calls))
        for call, (text, images) in zip(tool_calls, results, strict=True):
            self.messages.append(Message("tool", text, images, tool_call_id=call.id, name=call.name, kind="tool"))
        sent = sum(len(m.content) for m in self.messages[:index]) // 4
        written = 40 + len(said + (reasoning or "")) // 4
        number = len(self.steps)
        self.steps.append(Step(number, 1.7e9 + number, 0.5, 0.2, Usage(sent, written), tuple(c.name for c in tool_calls)))
        return self

    def call(
        self,
        name: str,
        result: str = "ok",
        said: str = "",
        images: tuple[str, ...] = (),
        reasoning: str | None = None,
        **args: Any,
    ) -> TrajectoryBuilder:
        """A model turn making one call."""
        return self.turn([(name, args)], [(result, images)], said, reasoning)

    def inject(
        self,
        artifact: str,
        findings: Sequence[dict[str, str]],
        tool: str = "inspect_slide",
        image: str | None = None,
        thought: str | None = None,
    ) -> TrajectoryBuilder:
        """The critic's review of the last turn's inspection of `artifact` (what it saw: `image`), as the loop injects it."""
        index = len(self.messages)
        seen = ":".join(part for part in (tool, artifact, image) if part)
        self.injections.append(CriticInjection(len(self.steps) - 1, index, "critic-vlm", json.dumps(list(findings)), seen))
        thought = thought or "\n".join(f"- [{f['category']}/{f['severity']}] {f['evidence']} -> {f['fix']}" for f in findings)
        call = ToolCall(f"critic_{index}", "thinking", json.dumps({"thought": thought}))
        self.messages += [
            Message("assistant", tool_calls=(call,), kind="critic"),
            Message("tool", thought, tool_call_id=call.id, name="thinking", kind="critic"),
        ]
        return self

    def warn(self) -> TrajectoryBuilder:
        """A context-budget warning on the last tool result, as the loop appends it."""
        last = self.messages[-1]
        warning = CONTEXT_WARNING.format(used=41000, window=50000, percent=82, remaining=9000)
        self.messages[-1] = Message(
            "tool", last.content + warning, last.images, tool_call_id=last.tool_call_id, name=last.name, kind=last.kind
        )
        return self

    def build(
        self,
        model: str = "test-model",
        policy: str = "model",
        status: str = "finalized",
        failure: str | None = None,
        outcome: str | None = "done",
        origin: Origin | None = None,
    ) -> Trajectory:
        return Trajectory(
            task_id=self.task_id,
            agent=self.agent,
            model=model,
            policy=policy,
            messages=tuple(self.messages),
            steps=tuple(self.steps),
            injections=tuple(self.injections),
            tools_json=json.dumps([_schema(name) for name in TOOLS.get(self.agent, ())]),
            status=status,
            failure=failure,
            outcome=outcome,
            origin=origin or Origin(),
        )


def play(spec: RolloutSpec, run: RunSpec, rng: random.Random, workspace: Path) -> list[Trajectory]:
    """The rollout's trajectories, researcher then presenter (failed: the researcher's alone), their files written."""
    played = []
    for agent in AGENTS[:1] if spec.failure else AGENTS:
        t = TrajectoryBuilder(spec.task_id, agent)
        _work(t, run, rng, workspace, spec)
        if spec.slides:
            (_manuscript if agent == "researcher" else _slides)(t, spec, run, workspace)
        if spec.warned and agent == "presenter":
            t.warn()
        if not spec.failure:
            t.call("finalize", "Finalized.", reasoning=FINALIZED if run.reasoning else None, outcome=OUTCOMES[agent])
        template, digest = TEMPLATES[agent]
        used = ModelUse(run.model, "scripted" if run.policy == "scripted" else "openai", 0.7, 0.95, 8192)
        played.append(
            t.build(
                run.model,
                run.policy,
                "failed" if spec.failure else "finalized",
                spec.failure,
                None if spec.failure else OUTCOMES[agent],
                Origin({template: digest}, {"agent": used}),
            )
        )
    return played


def _work(t: TrajectoryBuilder, run: RunSpec, rng: random.Random, workspace: Path, spec: RolloutSpec) -> None:
    """`run.steps` turns (or a number drawn up to `run.steps_max`): a slide written and its work inspected at once,
    two observations of `run.observation_chars` (the presenter's second with the render), the critic's note."""
    steps = rng.randint(run.steps, run.steps_max) if run.steps_max else run.steps
    inspect = "inspect_slide" if t.agent == "presenter" else "inspect_manuscript"
    for step in range(steps):
        render = f"renders/slide_{step + 1:02d}.png"
        variant = rng.randrange(256)
        if t.agent == "presenter":
            save(workspace / render, slide_png(run.render_size or SLIDE_PX[spec.aspect], variant))
        calls = [("write_file", {"path": f"slides/slide_{step + 1:02d}.html"}), (inspect, {"path": "manuscript.md"})]
        said, reasoning = _words(rng, 60), _words(rng, 120)
        results = [
            (_words(rng, run.observation_chars) + " <image> literal", ()),
            (_words(rng, run.observation_chars), (render,) if t.agent == "presenter" else ()),
        ]
        t.turn(calls, results, said, reasoning if run.reasoning else None)
        t.inject(render, [], thought=CRITIC_THOUGHT)


def _manuscript(t: TrajectoryBuilder, spec: RolloutSpec, run: RunSpec, workspace: Path) -> None:
    """The researcher's search, and a manuscript of one section per slide."""
    t.call("search_web", SEARCH_RESULT, query="tides")
    text = "\n---\n\n".join(
        f"# {title}\n\n{body}\n\n" for title, body in (slide_text(spec, n) for n in range(1, spec.slides + 1))
    )
    t.call("write_file", "Wrote the manuscript.", path="manuscript.md", content=text)
    save(workspace / "manuscript.md", text)


def _slides(t: TrajectoryBuilder, spec: RolloutSpec, run: RunSpec, workspace: Path) -> None:
    """The slides written; slide 1 inspected (its critic finding answered, with a revision), then again at the end."""
    first, render = "slides/slide_01.html", "renders/slide_01.png"
    save(workspace / render, slide_png(run.render_size or SLIDE_PX[spec.aspect], 1))
    t.call(
        "write_file", "Wrote the file.", path=first, content=slide_html(spec, 1, TITLE_FIX[0] if spec.revision else TITLE_FIX[1])
    )
    t.call("inspect_slide", OVERFLOW if spec.revision else NOTHING_MEASURED, images=(render,), html_file=first)
    if spec.revision:
        t.inject(first, [title_finding(1)], image=render)
    if spec.revision == "fix":
        t.call(
            "edit_file",
            "Replaced 1 occurrence(s).",
            said="Shrinking the title.",
            path=first,
            old_string=TITLE_FIX[0],
            new_string=TITLE_FIX[1],
        )
    elif spec.revision == "other":  # touches the slide, not the title
        body = slide_text(spec, 1)[1]
        t.call("edit_file", "Replaced 1 occurrence(s).", path=first, old_string=body, new_string=body + " (2017)")
    for number in range(2, spec.slides + 1):
        t.call("write_file", "Wrote the file.", path=f"slides/slide_{number:02d}.html", content=slide_html(spec, number))
    t.call("inspect_slide", NOTHING_MEASURED, images=(render,), html_file=first)
    for number in range(1, spec.slides + 1):
        save(workspace / "slides" / f"slide_{number:02d}.html", final_html(spec, number))


def _words(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def _schema(name: str) -> dict[str, Any]:
    props = {"thinking": {"thought": {"type": "string"}}, "finalize": {"outcome": {"type": "string"}}}.get(
        name, {"path": {"type": "string"}, "query": {"type": "string", "default": ""}}
    )
    return {
        "type": "function",
        "function": {"name": name, "description": f"The {name} tool.", "parameters": {"type": "object", "properties": props}},
    }
