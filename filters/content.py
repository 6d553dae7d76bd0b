"""The content gate: does the deck's text read like a deck a person would accept? Rules, no model call.

    python -m filters.content deck.pdf --lang zh --request "请帮我制作一份演示文稿……" --json [--layout deck_text.json]

It reads each slide as a reader does (filters/content_reading.py), from the deck's own layout when
the export recorded it (deck_text.json), else from the PDF: a heading; prose (the items: a bullet, a
paragraph, a caption each); the text of tables, code, charts, diagrams and formulas, which is content
but not prose; and page furniture (page numbers, footers and headers repeated across slides), which
is neither. Every check is its own failure category:

- `duplicate_slides`: two slides with the same or near-same heading and prose (shingle overlap) and
  the same tables, code and figures, if any (two slides of different tables are not duplicates; an
  agenda shown again before each part is one slide, filters/content_structure.py);
- `repeated_text`: a prose bullet or sentence said twice on a slide, or again on another slide
  (a closing summary in other words is not a repeat; one that copies a bullet is);
- `truncated_text`: text cut mid-sentence: a trailing or leading "…"/"...", a fragment
  that starts mid-citation ("3This", "[29] V. Nair", "et al.") or ends on a dangling word,
  a sentence whose words went missing (", .");
- `placeholder_text`: lorem ipsum, TODO, "Title here", template variables, and generic
  numbered headings ("Key points 1", "要点 2 (续)") used as headings or content;
- `request_echo`: the request pasted as slide content (a long run of its words outside
  the titles it quotes);
- `language_mix`: body text mostly not in the requested language (an item counts as Chinese
  unless it has more than twice as many Latin words as CJK characters, so terms and names
  in Latin script inside Chinese sentences are fine);
- `empty_slides`: a content slide with nothing but a heading (and furniture). The title slide may
  be bare, and so may a section divider (a heading that names a section, "Part 2: Results",
  "Section 3", "第二部分", "02 Method", or stands alone mid-slide, "Results", followed by a slide
  with content) and a closing slide ("Thank you", "Questions?", "谢谢") at the end.

Prose alone is checked for repetition, cuts, placeholders, echoes and language.

It runs before the model judges (filters.run), so a junk deck costs no judge tokens.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from core.cli import OneLineParser
from core.defects import DefectSource, codes_of
from core.language import normalize_text
from core.records import Verdict
from core.seams.candidate import Candidate
from filters.config import FiltersConfig
from filters.constraints import print_report
from filters.content_reading import CJK, CJK_CHAR, SlideText, layout_pages, pdf_pages, read_layout, slides_of
from filters.content_structure import agenda_repeats, bare_but_accepted, has_content
from filters.gates import GateSpec

GATE = "content"
CODES = codes_of(DefectSource.content)  # core/defects.py, in the order the checks run
CJK_LANGUAGES = ("zh", "ja", "ko")
SHOWN = 3  # instances named per failed check

_TOKEN = re.compile(rf"[a-z0-9\u00c0-\u024f]+|[{CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_OTHER_SCRIPT = re.compile(rf"[{CJK}\u0400-\u04ff\u0590-\u06ff\u0e00-\u0e7f]")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")
_QUOTED = re.compile(r"\"[^\"]{2,300}\"|“[^”]{2,300}”|《[^》]{1,300}》|「[^」]{1,300}」|『[^』]{1,300}』")

_ELLIPSIS_END = re.compile(r"(?:…|\.{3}|⋯|。。。)\s*[\"'”’)\]]?\s*$")
_ELLIPSIS_START = re.compile(r"^[\"'“‘(\[]?\s*(?:…|\.{3}|⋯)")
_CUT_START = re.compile(r"^(?:\d{1,2}[A-Z][a-z]|\[\d+\]\s|et al\b|al\.\s|[,;:)\]，；：）])")  # "3This": a footnote mark glued on
_DANGLING_WORD = re.compile(r"(?:^|\s)(?:and|or|but|the|a|an|of|which|whose|is|are|was|were)$")  # prepositions may end a phrase
_DANGLING_MARK = re.compile(r"[,，、;；(（\[–—-]$")
_BROKEN = re.compile(r"[,，、;；]\s*[.。](?![.。])")  # ", ." : a sentence's words lost between its comma and its end

_PLACEHOLDER_CASED = re.compile(r"\b(?:TODO|TBD|FIXME|TKTK|XXX+)\b")
_PLACEHOLDER = re.compile(
    r"lorem ipsum|\b(?:title|text|subtitle|heading|content|image) (?:goes )?here\b|\byour (?:title|text|subtitle|name|content|company)\b"
    r"|\binsert\b.{0,30}\bhere\b|\bclick to (?:add|edit)\b|\[placeholder\]|\bplaceholder text\b|\bsample text\b"
    r"|\{\{[^}]*\}\}|\{[a-z_]+\}|在此(?:输入|添加|插入|填写)|此处(?:输入|添加|插入|填写)|待(?:补充|填写|完善)|占位(?:文字|文本|符)|示例文本|请输入",
    re.IGNORECASE,
)
_GENERIC = r"(?:key points?|main points?|points?|part|section|slide|topic|item|bullet|content|要点|重点|部分|内容|幻灯片|主题)"
_MORE = r"(?:\s*[(（](?:continued|cont\.?|续)[)）])"
_GENERIC_NUMBERED = re.compile(
    rf"^(?:{_GENERIC}\s*(?:\d+|[ivx]+)|第\s*\d+\s*(?:页|部分|节|章)){_MORE}*$|^{_GENERIC}{_MORE}+$", re.IGNORECASE
)
_GENERIC_BARE = re.compile(rf"^{_GENERIC}$", re.IGNORECASE)


@dataclass(frozen=True)
class ContentCheck:
    ok: bool
    detail: str
    slides: tuple[int, ...] = ()  # the slides at fault


@dataclass(frozen=True)
class ContentReport:
    slides: int
    checks: dict[str, ContentCheck]  # every code of CODES, in that order

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks.values())

    @property
    def failed(self) -> list[str]:
        return [code for code, c in self.checks.items() if not c.ok]

    def reasons(self) -> tuple[str, ...]:
        return tuple(f"{code}: {self.checks[code].detail}" for code in self.failed)

    def codes_by_slide(self) -> dict[int, list[str]]:
        """Slide number -> the failed checks that name it."""
        found: dict[int, list[str]] = defaultdict(list)
        for code in self.failed:
            for number in self.checks[code].slides:
                found[number].append(code)
        return dict(found)

    def to_verdict(self, task_id: str) -> Verdict:
        failed = self.failed
        return Verdict(
            task_id=task_id,
            gate=GATE,
            passed=not failed,
            category=failed[0] if failed else None,
            score=1 - len(failed) / len(self.checks),
            reasons=self.reasons(),
        )

    def to_json(self) -> dict[str, object]:
        checks = {code: {"ok": c.ok, "detail": c.detail} for code, c in self.checks.items()}
        return {"passed": self.passed, "checks": checks, "reasons": list(self.reasons())}


def tokens(text: str) -> list[str]:
    """Latin words (lower case) and single CJK characters: what the checks compare."""
    return _TOKEN.findall(normalize_text(text).lower())


def sentences(item: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(item) if s.strip()]


# ---------------------------------------------------------------- the checks


def check_content(
    slides: Sequence[SlideText], cfg: FiltersConfig, language: str | None = None, request: str | None = None
) -> ContentReport:
    repeats = agenda_repeats(slides)
    once = [s for s in slides if s.number not in repeats]  # an agenda shown before each part is said once
    checks = {
        "duplicate_slides": _duplicates(once, cfg.content_duplicate_similarity),
        "repeated_text": _repeats(once, cfg.content_repeat_min_tokens),
        "truncated_text": _truncated(slides),
        "placeholder_text": _placeholders(slides),
        "request_echo": _echo(slides, request, cfg.content_echo_tokens),
        "language_mix": _language_mix(slides, language, cfg.content_foreign_share),
        "empty_slides": _empty(slides),
    }
    return ContentReport(len(slides), checks)


def check_deck(
    pdf_path: Path, cfg: FiltersConfig, language: str | None = None, request: str | None = None, layout: Any = None
) -> ContentReport:
    """Read the deck from its `layout` (a deck_text.json's content) when given, else from `pdf_path`, and check it;
    raises ArtifactError (UnusablePDF for the PDF) when it cannot be read."""
    pages = layout_pages(layout, f"{pdf_path.parent}: deck text") if layout is not None else pdf_pages(pdf_path)
    return check_content(slides_of(pages), cfg, language, request)


def _failed(found: Sequence[tuple[tuple[int, ...], str]], what: str) -> ContentCheck:
    slides = tuple(sorted({n for numbers, _ in found for n in numbers}))
    shown = "; ".join(text for _, text in found[:SHOWN]) + (f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
    return ContentCheck(False, f"{what}: {shown}", slides)


def _quote(text: str, chars: int = 60) -> str:
    return f"“{text}”" if len(text) <= chars else f"“{text[:chars].rstrip()}…”"  # the report's own abbreviation


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = tokens(text)
    return set(zip(words, words[1:])) if len(words) > 1 else {tuple(words)} if words else set()


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _duplicates(slides: Sequence[SlideText], threshold: float) -> ContentCheck:
    whole = [_shingles(s.text) for s in slides]
    bodies = [_shingles(s.body) if len(tokens(s.body)) >= 4 else set() for s in slides]
    shown = [_shingles(" ".join(s.figures)) for s in slides]
    found = []
    for i, j in itertools.combinations(range(len(slides)), 2):
        similarity = max(_jaccard(whole[i], whole[j]), _jaccard(bodies[i], bodies[j]))
        same_figures = shown[i] == shown[j] or _jaccard(shown[i], shown[j]) >= threshold
        if similarity >= threshold and same_figures:
            a, b = slides[i].number, slides[j].number
            found.append(((a, b), f"slides {a} and {b} ({similarity:.0%} alike)"))
    return _failed(found, "near-same slides") if found else ContentCheck(True, "no two slides alike")


def _repeats(slides: Sequence[SlideText], min_tokens: int) -> ContentCheck:
    found: list[tuple[tuple[int, ...], str]] = []
    where: dict[tuple[str, ...], set[int]] = defaultdict(set)
    text_of: dict[tuple[str, ...], str] = {}
    for slide in slides:
        keys = [(tuple(tokens(s)), s) for item in slide.items for s in sentences(item)]
        for key, count in Counter(k for k, _ in keys if len(k) >= 2).items():
            if count > 1:
                found.append(((slide.number,), f"slide {slide.number} says {_quote(dict(keys)[key])} {count} times"))
        for key, text in keys:
            if len(key) >= min_tokens:
                where[key].add(slide.number)
                text_of.setdefault(key, text)
    long_keys = sorted(where, key=len)
    for key in long_keys:
        others = set().union(*(where[k] for k in long_keys if len(k) > len(key) and k[: len(key)] == key))  # a cut copy
        numbers = sorted(where[key] | others)
        if len(numbers) > 1 and (len(where[key]) > 1 or others - where[key]):
            found.append((tuple(numbers), f"{_quote(text_of[key])} on slides {', '.join(map(str, numbers))}"))
    return _failed(found, "repeated") if found else ContentCheck(True, "no bullet or sentence repeated")


def _cut(item: str) -> bool:
    return bool(
        _ELLIPSIS_END.search(item)
        or _ELLIPSIS_START.search(item)
        or _CUT_START.search(item)
        or _DANGLING_WORD.search(item)
        or _DANGLING_MARK.search(item)
        or _BROKEN.search(item)
        or item.count("(") + item.count("（") > item.count(")") + item.count("）")
    )


def _truncated(slides: Sequence[SlideText]) -> ContentCheck:
    found = [
        ((s.number,), f"slide {s.number}: {_quote(item[-60:] if len(item) > 60 else item)}")
        for s in slides
        for item in s.items
        if _cut(item)
    ]
    found += [((s.number,), f"slide {s.number} heading {_quote(s.heading)}") for s in slides if _ELLIPSIS_END.search(s.heading)]
    return _failed(found, "cut text") if found else ContentCheck(True, "no text cut mid-sentence")


def _placeholders(slides: Sequence[SlideText]) -> ContentCheck:
    bare_headings = Counter(s.heading.strip().lower() for s in slides if _GENERIC_BARE.match(s.heading.strip()))
    found = []
    for s in slides:
        heading = s.heading.strip()
        if _GENERIC_NUMBERED.match(heading) or bare_headings.get(heading.lower(), 0) > 1:
            found.append(((s.number,), f"slide {s.number} heading {_quote(heading)} is a generic numbered heading"))
        for text in (heading, *s.items):
            if _PLACEHOLDER.search(text) or _PLACEHOLDER_CASED.search(text):
                found.append(((s.number,), f"slide {s.number}: {_quote(text)}"))
        found += [
            ((s.number,), f"slide {s.number} lists {_quote(item)}")
            for item in s.items
            if _GENERIC_NUMBERED.match(item.strip()) or _GENERIC_BARE.match(item.strip())
        ]
    return _failed(found, "placeholder or generic text") if found else ContentCheck(True, "no placeholder or generic heading")


def _ngrams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _echo(slides: Sequence[SlideText], request: str | None, n: int) -> ContentCheck:
    if not request:
        return ContentCheck(True, "no request given: not checked")
    said = {g for part in _QUOTED.split(normalize_text(request)) for g in _ngrams(tokens(part), n)}
    found = []
    for s in slides:
        for text in (s.heading, *s.items):
            words = tokens(text)
            hits = [i for i in range(len(words) - n + 1) if tuple(words[i : i + n]) in said]
            if hits:
                found.append(((s.number,), f"slide {s.number} repeats the request: {_quote(text)}"))
    return (
        _failed(found, f"request text (a run of {n}+ of its words) on slides")
        if found
        else ContentCheck(True, "no request text on the slides")
    )


def _foreign(item: str, language: str) -> bool:
    """Not in `language`: a Latin sentence in a Chinese deck; mostly non-Latin letters in a Latin-script deck."""
    if (
        language in CJK_LANGUAGES
    ):  # a Chinese word is one to three characters: twice as many Latin words as CJK characters is not Chinese
        latin = len(_LATIN_WORD.findall(item))
        return latin >= 3 and latin > 2 * len(CJK_CHAR.findall(item))
    letters = sum(ch.isalpha() for ch in item)
    return letters > 0 and len(_OTHER_SCRIPT.findall(item)) > letters / 2


def _language_mix(slides: Sequence[SlideText], language: str | None, threshold: float) -> ContentCheck:
    if not language:
        return ContentCheck(True, "no language given: not checked")
    language = language.split("-")[0].lower()
    per_slide = {s.number: (sum(len(i) for i in s.items if _foreign(i, language)), sum(len(i) for i in s.items)) for s in slides}
    foreign, total = sum(f for f, _ in per_slide.values()), sum(t for _, t in per_slide.values())
    share = foreign / total if total else 0.0
    if share <= threshold:
        return ContentCheck(True, f"{share:.0%} of the body text is not in {language}")
    worst = tuple(n for n, (f, t) in per_slide.items() if t and f / t > threshold)
    return ContentCheck(False, f"{share:.0%} of the body text is not in {language} (slides {', '.join(map(str, worst))})", worst)


def _empty(slides: Sequence[SlideText]) -> ContentCheck:
    found = [
        ((s.number,), f"slide {s.number} ({_quote(s.heading) if s.heading else 'no text'})")
        for k, s in enumerate(slides)
        if not has_content(s) and not bare_but_accepted(slides, k)
    ]
    return _failed(found, "a heading and nothing else") if found else ContentCheck(True, "every content slide has content")


# ---------------------------------------------------------------- the gate


class ContentGate:
    name = GATE

    def __init__(self, cfg: FiltersConfig):
        self.cfg = cfg

    async def judge(self, candidate: Candidate) -> Verdict:
        task = candidate.task
        language = task.constraints.language or task.language
        layout = candidate.deck_text()
        report = await asyncio.to_thread(check_deck, candidate.path("pdf"), self.cfg, language, task.instruction, layout)
        return report.to_verdict(task.task_id)


SPEC = GateSpec(GATE, ContentGate, own_categories=CODES)


# ---------------------------------------------------------------- CLI


def _human(pdf: Path, report: ContentReport) -> str:
    lines = [f"{pdf}: {report.slides} slides, {'passed' if report.passed else 'failed: ' + ', '.join(report.failed)}"]
    lines += [f"  {'ok  ' if c.ok else 'FAIL'}  {code:<16}  {c.detail}" for code, c in report.checks.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m filters.content", description=__doc__.split("\n\n")[0])
    parser.add_argument("pdf", type=Path, help="the exported deck PDF")
    parser.add_argument("--lang", choices=("en", "zh"), help="the language the deck was asked in (language_mix)")
    parser.add_argument("--request", metavar="TEXT", help="the task's request (request_echo)")
    parser.add_argument("--layout", type=Path, metavar="JSON", help="read the slides from the deck's deck_text.json, not the PDF")
    parser.add_argument("--json", action="store_true", help='print {"passed", "checks", "reasons"} as JSON')
    args = parser.parse_args(argv)
    return print_report(
        parser.prog,
        lambda: check_deck(args.pdf, FiltersConfig(), args.lang, args.request, read_layout(args.layout) if args.layout else None),
        ContentReport.to_json,
        lambda report: _human(args.pdf, report),
        args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
