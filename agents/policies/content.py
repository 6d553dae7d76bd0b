"""What the scripted baseline writes: an extractive outline of a document, and the manuscript it makes.

The deck follows the document's own structure: its top-level sections (or, when there are
fewer than slides, every section with text), related work and background dropped first
when there are more; each slide holds the key sentences of its section (TextRank, whole
sentences only, none twice in the deck) and the section's figure with its printed
caption. The title slide carries the document's title and its abstract's key sentence;
the closing slide the key sentences of its conclusion (or abstract), which no other slide
says. No model, no paraphrase: every bullet is a sentence of the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.manuscript import SIZE_NOTE
from agents.policies.extract import CJK, Figure, ParsedDocument, Section, key_sentences, parse_document, plain, section_sentences
from core.markdown_slides import split_slides

BULLETS = 3  # per content slide; one fewer beside a figure
SUBTITLE_CHARS = 180
_CLOSING = re.compile(r"^(?:conclusions?|summary|discussion|concluding remarks|结论|总结|小结)", re.IGNORECASE)
_ABSTRACT = re.compile(r"^(?:abstract|摘要)$", re.IGNORECASE)
_SECONDARY = re.compile(r"^(?:related work|background|prior work|preliminar|notation|相关工作|背景)", re.IGNORECASE)
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,}s?\b")
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVX]+\.)\s+")
WORDS = {
    "en": {"takeaways": "Key takeaways", "more": "continued"},
    "zh": {"takeaways": "要点回顾", "more": "续"},
}


@dataclass
class SlidePlan:
    title: str
    bullets: list[str] = field(default_factory=list)
    image: str | None = None  # workspace-relative
    image_alt: str = ""  # the figure's caption

    def markdown(self) -> str:
        lines = [f"# {self.title}", ""] + [f"- {b}" for b in self.bullets]
        if self.image:
            lines += ["", f"![{self.image_alt}]({self.image})"]
        return "\n".join(lines)


@dataclass
class _Unit:
    heading: str
    pool: list[str]  # its whole sentences in the deck's language
    figure: Figure | None


def heading_text(heading: str, acronyms: set[str]) -> str:
    """A heading as a slide title: no section number; an all-capital heading in sentence case (acronyms kept)."""
    text = _NUMBERING.sub("", heading).strip()
    if text.upper() != text or CJK.search(text):
        return text
    words = [w if w.strip(":,") in acronyms else w.lower() for w in text.split()]
    return " ".join(words)[:1].upper() + " ".join(words)[1:]


def _family(sections: tuple[Section, ...], index: int) -> list[Section]:
    """The section and its subsections."""
    level = sections[index].level
    family = [sections[index]]
    for later in sections[index + 1 :]:
        if later.level <= level:
            break
        family.append(later)
    return family


def _spread(units: list[_Unit], slots: int) -> list[_Unit]:
    """`slots` of the units, secondary sections (related work, background) dropped first, the rest evenly spaced."""
    while len(units) > slots and any(_SECONDARY.match(u.heading) for u in units):
        units = [u for u in units if u is not next(x for x in units if _SECONDARY.match(x.heading))]
    if len(units) <= slots:
        return units
    step = (len(units) - 1) / max(1, slots - 1)
    return [units[round(i * step)] for i in range(slots)] if slots > 1 else units[:1]


def _units(doc: ParsedDocument, language: str, slots: int, acronyms: set[str]) -> list[_Unit]:
    body = tuple(s for s in doc.sections if not _ABSTRACT.match(s.heading) and not _CLOSING.match(s.heading))
    if not body:
        return []
    top_level = min(s.level for s in body)
    top = []
    for i, section in enumerate(body):
        if section.level == top_level:
            family = _family(body, i)
            pool = [x for member in family for x in section_sentences(member, language)]
            figure = next((f for member in family for f in member.figures), None)
            top.append(_Unit(heading_text(section.heading, acronyms), pool, figure))
    top = [u for u in top if u.pool]
    if len(top) >= slots:
        return _spread(top, slots)
    every = [
        _Unit(heading_text(s.heading, acronyms), list(section_sentences(s, language)), next(iter(s.figures), None)) for s in body
    ]
    every = [u for u in every if u.pool]
    return _spread(every, slots) if len(every) >= slots else every


def outline(title: str, language: str, slide_count: int, documents: list[str], figures: dict[str, str]) -> list[SlidePlan]:
    """At most `slide_count` slides from `documents`: a title slide, a slide per chosen section, a closing slide.

    `figures` maps a figure's file name (as the document references it) to the workspace path
    it was copied to; only those figures are used."""
    lang = "zh" if language == "zh" else "en"
    words = WORDS[lang]
    docs = [parse_document(d) for d in documents]
    sections = tuple(s for d in docs for s in d.sections)
    doc = ParsedDocument(next((d.title for d in docs if d.title), None), sections)
    acronyms = {m.group() for s in sections for p in s.paragraphs for m in _ACRONYM.finditer(p)}
    deck_title = heading_text(plain(doc.title), acronyms) if doc.title else title
    used: list[str] = []
    abstract = [x for s in sections if _ABSTRACT.match(s.heading) for x in section_sentences(s, lang)]
    closing = [x for s in sections if _CLOSING.match(s.heading) for x in section_sentences(s, lang)]
    subtitle = [s for s in key_sentences(abstract, 1, used) if len(s) <= SUBTITLE_CHARS]
    used += subtitle
    if slide_count == 1:  # a poster: the key sentence of each part, on one page
        units = _units(doc, lang, 4, acronyms)
        bullets = [b for u in units for b in key_sentences(u.pool, 1, used)]
        return [SlidePlan(deck_title, subtitle + bullets)]
    slots = max(0, slide_count - 2)
    made: list[tuple[SlidePlan, list[str]]] = []
    for unit in _units(doc, lang, slots, acronyms):
        image = figures.get(unit.figure.path) if unit.figure else None
        bullets = key_sentences(unit.pool, BULLETS - bool(image), used)
        used += bullets
        if bullets:
            made.append(
                (SlidePlan(unit.heading, bullets, image, unit.figure.caption if image and unit.figure else ""), unit.pool)
            )
    for plan, pool in list(made):  # too few sections for the slides asked: a continuation slide where sentences are left
        more = key_sentences([x for x in pool if x not in used], BULLETS, used) if len(made) < slots else []
        if len(more) >= 2:
            used += more
            title = f"{plan.title} ({words['more']})" if lang == "en" else f"{plan.title}（{words['more']}）"
            made.insert(made.index((plan, pool)) + 1, (SlidePlan(title, more), pool))
    slides = [plan for plan, _ in made]
    recap = key_sentences(closing, BULLETS, used) or key_sentences(abstract, BULLETS, used)
    for _, pool in made[: BULLETS if not recap else 0]:  # no conclusion to quote: one more sentence of each part
        recap += key_sentences([x for x in pool if x not in used], 1, used + recap)
    return [SlidePlan(deck_title, subtitle), *slides, SlidePlan(words["takeaways"], recap or [s.title for s in slides])]


def manuscript_text(slides: list[SlidePlan]) -> str:
    return "\n\n---\n\n".join(s.markdown() for s in slides) + "\n"


_HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*#*$", re.MULTILINE)


def parse_manuscript(text: str) -> list[SlidePlan]:
    """The Presenter's reading of a manuscript: title, bullets and the first image (with its alt text) of each slide."""
    plans = []
    for chunk in split_slides(text):
        title = next((plain(m.group(1)) for m in _HEADING.finditer(chunk)), "")
        bullets = [plain(line[2:]) for line in chunk.splitlines() if line.startswith(("- ", "* "))]
        image = re.search(r"!\[([^\]]*)\]\(([^)\s]+)\)", chunk)
        plans.append(
            SlidePlan(title, bullets, image.group(2) if image else None, SIZE_NOTE.sub("", image.group(1)) if image else "")
        )
    return plans
