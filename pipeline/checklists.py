"""Each task's checklist: yes/no checks on the deck it asks for, in PresentBench's classes (core.records.CheckClass).

Written with the task (`pipeline.tasks`), stored in it (`Task.checklist`, `Task.checklist_by`) and judged by
`eval.run`. `rule_checklist` writes the checks that follow from the task itself, as plain rules: the slide
count, language and aspect it demands (each decidable from the deck), the sections of its source document the
deck should cover (decidable from the deck's text), and the design and correctness checks every deck gets (a
judge model's). A model task writer adds its own (`writer-NN`), written with the request from the request and
the document (pipeline/prompts/*_task.j2). The per-slide fidelity checks are written when a deck is judged, one
per slide it has.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from agents.policies.extract import parse_document
from agents.research.convert import pdf_to_markdown
from agents.workflow import ASPECT_NAMES, LANGUAGE_NAMES
from core.records import Check, CheckClass, Task

RULES = "rules: pipeline/checklists.py (the task's constraints and its source's sections)"


def checklist_by(writer: str, wrote_checks: bool) -> str:
    """Task.checklist_by: the rules, and the model writer whose checks were added (with its request's template)."""
    return f"{RULES}; {writer}: with the request (pipeline/prompts/*_task.j2)" if wrote_checks else RULES


MAX_SECTIONS = 6  # the source's top-level sections a deck should cover, at most
TEXT_SOURCES = (".md", ".markdown", ".txt")
NOT_CONTENT = {
    "abstract",
    "references",
    "bibliography",
    "acknowledgements",
    "acknowledgments",
    "appendix",
    "摘要",
    "参考文献",
    "致谢",
    "附录",
}

DESIGN = (
    ("visual_design-overflow", "No text on any slide overflows its box or overlaps another element."),
    ("visual_design-readable", "Text on every slide is large enough to read and contrasts with its background."),
    ("visual_design-consistent", "The slides share one consistent visual style (fonts, colours, layout)."),
)
CORRECTNESS = (("correctness-facts", "The names, numbers and dates on the slides agree with the source document."),)


@cache
def _markdown(path: Path) -> str:
    """A source document as the agents read it: Markdown, or a PDF converted ("" for another kind)."""
    if path.suffix.lower() == ".pdf":
        return pdf_to_markdown(path.read_bytes(), path.stem, with_images=False).markdown
    if path.suffix.lower() in TEXT_SOURCES:
        return path.read_text(encoding="utf-8", errors="replace")
    return ""


def source_text(task: Task) -> str:
    """The text of the task's source documents, in order (what the checklist judge reads for content checks)."""
    return "\n\n".join(_markdown(Path(a)) for a in task.attachments if Path(a).is_file()).strip()


@cache
def _headings(path: Path) -> tuple[str, ...]:
    """A source document's top-level section headings (its content sections, not its abstract or references)."""
    markdown = _markdown(path)
    sections = [
        s for s in parse_document(markdown).sections if s.heading.strip() and s.heading.strip().lower() not in NOT_CONTENT
    ]
    top = min((s.level for s in sections), default=1)  # a Markdown source's `##` sections under its `#` title
    return tuple(s.heading for s in sections if s.level == top)


def source_sections(task: Task) -> list[str]:
    """The top-level section headings of the task's source documents, in order (a document read once per process)."""
    headings = [h for a in task.attachments if Path(a).is_file() for h in _headings(Path(a))]
    return list(dict.fromkeys(headings))[:MAX_SECTIONS]


def rule_checklist(task: Task) -> tuple[Check, ...]:
    """The checks that follow from `task` (see the module docstring)."""
    c = task.constraints
    checks: list[Check] = []
    if c.slides_min is not None or c.slides_max is not None:
        low, high = c.slides_min or 1, c.slides_max or c.slides_min
        count = f"{low} slide" + ("" if low == 1 else "s") if low == high else f"between {low} and {high} slides"
        checks.append(Check("fundamentals-slides", CheckClass.fundamentals, f"The deck has {count}.", f"slides:{low}-{high}"))
    if c.language:
        name = LANGUAGE_NAMES["en"].get(c.language, c.language)
        checks.append(
            Check(
                "fundamentals-language", CheckClass.fundamentals, f"The slides are written in {name}.", f"language:{c.language}"
            )
        )
    if c.aspect_ratio:
        aspect = ASPECT_NAMES["en"].get(c.aspect_ratio, c.aspect_ratio)
        checks.append(
            Check("fundamentals-aspect", CheckClass.fundamentals, f"The slides are {aspect}.", f"aspect:{c.aspect_ratio}")
        )
    checks.append(Check("fundamentals-title", CheckClass.fundamentals, "The first slide gives the presentation a title."))
    checks += [Check(check_id, CheckClass.visual_design, question) for check_id, question in DESIGN]
    for i, heading in enumerate(source_sections(task), 1):
        question = f"The deck covers the source document's section “{heading}”."
        checks.append(Check(f"completeness-{i:02d}", CheckClass.completeness, question, f"mentions:{heading}"))
    checks += [Check(check_id, CheckClass.correctness, question) for check_id, question in CORRECTNESS]
    return tuple(checks)  # in English whatever the deck's language: the judge reads both
