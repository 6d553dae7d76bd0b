"""The scripted baseline policy (`llm=scripted`): a deterministic, rule-based agent. Not a model.

It plays the Researcher, the Presenter, or both (single-agent mode) through the
same agent loop and the same real tools as a model would: it converts the
attachments, searches the offline corpus, writes a manuscript that honours the
constraints, inspects it, writes HTML slides from built-in designs, inspects them
and rewrites what the inspection measured (shrinks type on overflow, drops images
that overlap or fail, switches to high-contrast text), and finalizes. Calls that do
not depend on each other share a turn, as a model's parallel tool calls would: all
slides are written in one turn and inspected in the next. It
reads the workspace directly to plan; every change it makes goes through a tool.
Every record it produces says `policy="scripted"`.

Each role is a generator that yields (reasoning, tool calls) and receives the
observation texts of those calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Generator, Sequence

from agents.brief import Brief
from agents.policies.content import BULLETS, SlidePlan, manuscript_text, outline, parse_manuscript
from agents.policies.designs import Design, design_for, design_plan, slide_html
from agents.policies.extract import plain, sentences
from core.language import detect_language
from core.llm.conversation import DEFAULT_PROFILE
from core.llm.results import ChatResult
from core.llm.wire import estimate_prompt_tokens
from core.records import Message, ModelUse, ToolCall, Usage
from core.run.metering import note_model

NAME = "scripted-policy"
USE = ModelUse(NAME, "scripted")
DEFAULT_SLIDES = 6
MAX_SLIDE_FIXES = 4
Calls = list[tuple[str, dict[str, Any]]]
Plan = Generator[tuple[str, Calls], list[str], None]

_SAVED_IMAGE = re.compile(
    r"^\d+\. .*\((?P<w>\d+)x(?P<h>\d+)\) saved to (?P<path>\S+)\n\s+caption: (?P<caption>.*)$", re.MULTILINE
)
_WHOLE_OUTPUT = re.compile(r"The whole output is in (\S+);")
_HIT_URL = re.compile(r"^\s+(corpus://\S+)")
_FIGURE_CAPTION = re.compile(r"^(?:figure|fig\.|图)\s*\d+", re.IGNORECASE)
_NUMBERING = re.compile(r"^\d+(?:\.\d+)*\s+")
_LISTED_IMAGE = re.compile(r"^- (\S+\.(?:png|jpe?g|gif|webp)) \((\d+)x(\d+)\)", re.MULTILINE)
_DEFECT = re.compile(r"^(\w+) \((critical|major|minor)\)", re.MULTILINE)
_ISSUE = re.compile(r"^- (\w+)(?: \(slide (\d+)\))?", re.MULTILINE)
_QUOTED = re.compile(r"[\"“《]([^\"”》]{4,120})[\"”》]")


class ScriptedPolicy:
    """Implements the Model protocol with a scripted plan per role."""

    name = NAME
    context_window: int | None = None
    vision = True

    def __init__(self, role: str, brief: Brief, profile: str = DEFAULT_PROFILE):
        self.profile = profile  # calls no server: the profile its samples are made for (the student's, by default)
        plans = {"researcher": researcher, "presenter": presenter, "single": single}
        self._plan = plans[role](brief)
        self._turn = 0

    async def chat(
        self, messages: Sequence[Message], tools: Sequence[dict] | None = None, image_root: Path | None = None
    ) -> ChatResult:
        note_model("agent", USE)
        observations = _latest_observations(messages)
        try:
            reasoning, calls = next(self._plan) if self._turn == 0 else self._plan.send(observations)
        except StopIteration:  # the plan is over but the loop goes on (e.g. finalize refused): say so
            reasoning, calls = "The scripted plan has no further steps.", [("finalize", {"outcome": "done"})]
        self._turn += 1
        tool_calls = tuple(
            ToolCall(f"call_{self._turn}_{i}", n, json.dumps(a, ensure_ascii=False)) for i, (n, a) in enumerate(calls)
        )
        out_chars = len(reasoning) + sum(len(c.arguments) for c in tool_calls)
        usage = Usage(estimate_prompt_tokens(messages), out_chars // 4)
        return ChatResult("", reasoning, tool_calls, usage, "tool_calls", 0.0, usage_reported=False)


def _latest_observations(messages: Sequence[Message]) -> list[str]:
    """Tool results since the policy's last turn (critic injections and image notes excluded)."""
    out: list[str] = []
    for m in reversed(messages):
        if m.role == "assistant" and m.kind != "critic":
            break
        if m.role == "tool" and m.kind == "tool":
            out.append(m.content)
    return out[::-1]


# ---------------------------------------------------------------- the Researcher


def topic(brief: Brief) -> str:
    quoted = _QUOTED.search(brief.instruction)
    if quoted:
        return _NUMBERING.sub("", quoted.group(1).strip())
    first = re.split(r"[.。!！?？\n]", brief.instruction.strip())[0]
    return first[:80]


def researcher(brief: Brief, finalize: bool = True) -> Plan:
    """Read the attachments (or the corpus document search finds on the topic), then write an extractive outline."""
    count = brief.slides or (1 if brief.aspect.startswith("A") else DEFAULT_SLIDES)
    title = topic(brief)
    source = (
        f"read {len(brief.attachments)} attachment(s)"
        if brief.attachments
        else f"search the corpus for '{title}' and read the best document"
    )
    plan = (
        f"Scripted plan: {source}, write {count} slide(s) in {brief.language} from its sections, check the manuscript, finalize."
    )
    yield plan, [("thinking", {"thought": plan})]
    documents: list[str] = []
    figures: dict[str, str] = {}  # file name as the document cites it -> its workspace path
    for attachment in brief.attachments:
        stem = PurePosixPath(attachment).stem
        folder = f"sources/{stem}"
        (observation,) = yield (
            f"Converting {attachment} to markdown.",
            [("convert_to_markdown", {"file_path": attachment, "output_folder": folder})],
        )
        converted = brief.workspace / folder / f"{stem}.md"
        if converted.exists():
            documents.append(converted.read_text(encoding="utf-8", errors="replace"))
            figures |= {
                PurePosixPath(m.group(1)).name: m.group(1)
                for m in _LISTED_IMAGE.finditer(observation)
                if _landscape_enough(int(m.group(2)), int(m.group(3)))
            }
    captions: dict[str, str] = {}
    if not documents:
        (found,) = yield f"Searching the corpus for '{title}'.", [("search_web", {"query": title, "max_results": 6})]
        url = _best_hit(found, brief.language)
        if url:
            (page,) = yield f"Reading {url}.", [("fetch_url", {"url": url})]
            whole = _WHOLE_OUTPUT.search(page)  # a long page is cut in the observation and kept whole in a file
            documents.append((brief.workspace / whole.group(1)).read_text(encoding="utf-8", errors="replace") if whole else page)
        (pictures,) = yield f"Looking for figures about '{title}'.", [("search_images", {"query": title})]
        captions = dict(_captioned(pictures))
    slides = outline(title, brief.language, count, documents, figures)
    for slide, (path, caption) in zip([s for s in slides[1:-1] if not s.image][::2], captions.items()):
        slide.image, slide.image_alt = path, caption
        slide.bullets = slide.bullets[: BULLETS - 1]
    pictured = [s for s in slides if s.image]
    if pictured:
        copy = "mkdir -p assets && cp " + " ".join(f"'{s.image}'" for s in pictured) + " assets/"
        yield "Collecting the figures into assets/.", [("execute_command", {"command": copy})]
        for s in pictured:
            assert s.image is not None  # pictured: the slides with an image
            s.image = f"assets/{PurePosixPath(s.image).name}"
    yield (
        f"Writing the manuscript: {len(slides)} slides.",
        [("write_file", {"path": brief.manuscript, "content": manuscript_text(slides)})],
    )
    for _ in range(3 if brief.can_inspect else 0):
        (report,) = yield "Checking the manuscript.", [("inspect_manuscript", {"md_file": brief.manuscript})]
        fixed = _fix_manuscript(slides, report, count)
        if fixed is None:
            break
        slides = fixed
        yield "Fixing the reported issues.", [("write_file", {"path": brief.manuscript, "content": manuscript_text(slides)})]
    if finalize:
        yield "The manuscript is complete.", [("finalize", {"outcome": brief.manuscript})]


def _landscape_enough(width: int, height: int) -> bool:
    return width >= 120 and height >= 80 and 0.3 <= width / height <= 4


def _best_hit(found: str, language: str) -> str | None:
    """The first corpus document among the search results whose title and snippet are in `language`."""
    lines = found.splitlines()
    for i, line in enumerate(lines):
        url = _HIT_URL.match(lines[i + 1]) if re.match(r"^\d+\. ", line) and i + 2 < len(lines) else None
        if url and detect_language(f"{line} {lines[i + 2]}").lang == language:
            return url.group(1)
    return None


def _captioned(pictures: str) -> list[tuple[str, str]]:
    """(saved path, caption's first sentence) of the images search_images saved whose caption is a printed figure caption."""
    found = []
    for match in _SAVED_IMAGE.finditer(pictures):
        caption = sentences(plain(match["caption"]))[0] if match["caption"].strip() else ""
        if _landscape_enough(int(match["w"]), int(match["h"])) and _FIGURE_CAPTION.match(caption) and caption[-1:] in ".。":
            found.append((match["path"], caption))
    return found


def _fix_manuscript(slides: list[SlidePlan], report: str, count: int) -> list[SlidePlan] | None:
    """Slides with the reported issues fixed, or None when nothing is left that it can fix.

    Too few slides is not fixed: the baseline has no more of the document to say, and padding
    would repeat it."""
    issues = [(m.group(1), int(m.group(2)) if m.group(2) else None) for m in _ISSUE.finditer(report)]
    fixable = [
        (code, n)
        for code, n in issues
        if n and n <= len(slides) and code in ("missing_asset", "external_url", "duplicate_image", "missing_alt", "empty_slide")
    ]
    if not fixable and len(slides) <= count:
        return None
    slides = [SlidePlan(s.title, list(s.bullets), s.image, s.image_alt) for s in slides]
    for code, n in fixable:
        if code in ("missing_asset", "external_url", "duplicate_image"):
            slides[n - 1].image = None
        elif code == "missing_alt":
            slides[n - 1].image_alt = slides[n - 1].title
    slides = [s for n, s in enumerate(slides, 1) if ("empty_slide", n) not in fixable or n == 1]
    while len(slides) > count:
        slides.pop(-2 if len(slides) > 2 else -1)
    return slides


# ---------------------------------------------------------------- the Presenter


def presenter(brief: Brief) -> Plan:
    """Write every slide, inspect them all, rewrite the ones with defects; independent calls share a turn."""
    yield "Reading the manuscript.", [("read_file", {"path": brief.manuscript})]
    text = (brief.workspace / brief.manuscript).read_text(encoding="utf-8", errors="replace")
    design = design_for(brief.task_id)
    plans = parse_manuscript(text)
    drafts = [SlideDraft(number, plan, design, cover=number == 1 and len(plans) > 1) for number, plan in enumerate(plans, 1)]
    thought = f"Design '{design.name}': {design.motif}. {len(drafts)} slides at {brief.width}x{brief.height}."
    yield thought, [("thinking", {"thought": thought})]
    yield "Writing the design plan.", [("write_file", {"path": "design_plan.md", "content": design_plan(design, brief.language)})]
    pending = drafts
    for _ in range(MAX_SLIDE_FIXES):
        for batch in _batches(pending, brief.calls_per_turn):
            yield f"Writing {_numbers(batch)}.", [("write_file", {"path": d.path, "content": d.html(brief)}) for d in batch]
        if not brief.can_inspect:
            break
        reports: list[str] = []
        for batch in _batches(pending, brief.calls_per_turn):
            reports += yield (
                f"Inspecting {_numbers(batch)}.",
                [("inspect_slide", {"html_file": d.path, "aspect_ratio": brief.aspect}) for d in batch],
            )
        pending = [draft for draft, report in zip(pending, reports) if draft.revise(report)]
        if not pending:
            break
    yield "Every slide is written and inspected.", [("finalize", {"outcome": "slides"})]


@dataclass
class SlideDraft:
    """One slide as the Presenter writes it, and what its inspections made it change."""

    number: int
    plan: SlidePlan
    design: Design
    cover: bool = False  # the title slide of a deck (a one-slide poster is not one)
    scale: float = 1.0
    stacked: bool = False
    bullets: list[str] = field(init=False)
    image: str | None = field(init=False)  # relative to the slide file

    def __post_init__(self) -> None:
        self.bullets = list(self.plan.bullets)
        self.image = f"../{self.plan.image}" if self.plan.image else None

    @property
    def path(self) -> str:
        return f"slides/slide_{self.number:02d}.html"

    def html(self, brief: Brief) -> str:
        return slide_html(
            self.design,
            brief.width,
            brief.height,
            self.plan.title,
            self.bullets,
            self.image,
            self.plan.image_alt,
            self.scale,
            self.stacked,
            cover=self.cover,
        )

    def revise(self, report: str) -> bool:
        """Change what the inspection report measured; False when the slide has no major defect."""
        codes = {code for code, severity in _DEFECT.findall(report) if severity != "minor"}
        if codes & {"overflow", "text_clipped"}:
            self.scale *= 0.8
            if self.scale < 0.6 and len(self.bullets) > 2:
                self.bullets, self.scale = self.bullets[:-1], 0.8
        if "overlap" in codes:
            self.stacked, self.image = (True, self.image) if not self.stacked else (self.stacked, None)
        if "broken_image" in codes:
            self.image = None
        if "low_contrast" in codes:
            self.design = self.design.high_contrast()
        return bool(codes)


def _batches(drafts: list[SlideDraft], size: int) -> list[list[SlideDraft]]:
    return [drafts[i : i + size] for i in range(0, len(drafts), size)]


def _numbers(drafts: list[SlideDraft]) -> str:
    numbers = [str(d.number) for d in drafts]
    return f"slide {numbers[0]}" if len(numbers) == 1 else f"slides {', '.join(numbers)}"


def single(brief: Brief) -> Plan:
    yield from researcher(brief, finalize=False)
    yield from presenter(brief)
