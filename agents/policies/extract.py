"""What the scripted baseline reads out of a document: its sections, their whole sentences, its figures.

A document is the Markdown of `convert_to_markdown` or a corpus page from `fetch_url`.
Headings are Markdown headings, lines made only of bold runs, numbered lines ("2.1 RNN
ENCODER–DECODER") and all-capital lines ("ABSTRACT"); a line that recurs on many pages
is a running header, not a heading; nothing after the references is read. A figure is
an image reference with a "Figure N"/"图 N" caption printed below it. Sentences are
whole: a bullet is one sentence of the document, never a cut one. Key sentences are
chosen by TextRank (Mihalcea and Tarau, 2004) over the sentences of a section.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core.language import normalize_text

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_GAP = re.compile(
    r"(?<=[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff，。、；：！？（）])\s+(?=[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff，。、；：！？（）])"
)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$")
_BOLD_ONLY = re.compile(r"^(?:\*\*[^*\n]+\*\*[ \t]*)+$")
_NUMBERED = re.compile(r"^((?:\d{1,2}\.)*\d{1,2})\.?\s+(\S.*)$")
_ALL_CAPS = re.compile(r"^[A-Z][A-Z0-9 :&,'’–—-]{2,70}$")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_CAPTION = re.compile(r"^(?:figure|fig\.|图)\s*\d+", re.IGNORECASE)
_PAGE_MARK = re.compile(r"^\[page \d+\]$|^Source: \S+$")
_DROPPED_MARKUP = re.compile(r"<sup>.*?</sup>|<sub>.*?</sub>|\$[^$]*\$")  # footnote marks and formulas go, with their content
_MARKUP = re.compile(r"\[([^\]]*)\]\([^)]*\)|</?[a-zA-Z][^>]*>|[*_`#]")
_CITATION = re.compile(r"\s*\((?:[^()]*\b(?:19|20)\d{2}[a-z]?)\)|\s*\[\d+(?:\s*[,–-]\s*\d+)*\]")
_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_ABBREVIATION = re.compile(r"(?:\b(?:al|e\.g|i\.e|Fig|Figs|Eq|Eqs|vs|cf|etc|Sec|No|resp|approx)|\b[A-Z])\.$")
_MATH = re.compile(r"[=<>≤≥∑∫√∂∈∉×÷^_∗·→←↔⌈⌉⌊⌋|\\{}\[\]⟨⟩−±]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")
_ARTIFACT = re.compile(
    r"\s[:;,.]|\b(?:in|of|by|and|the|to|see|from|with)\.$|[,，]\s*[.。]"
)  # a space before punctuation; a removed citation's stub
_VARIABLE = re.compile(
    r"(?<![A-Za-z])(?:[A-Za-z]|[a-z][A-Za-z0-9]|[A-Z][a-z0-9])\d*(?![A-Za-z])"
)  # x, p, xi, x0, Ln: a formula's symbols
_STOP_SECTIONS = re.compile(r"^(?:references|bibliography|appendix|参考文献|附录)", re.IGNORECASE)
_SKIP_SECTIONS = re.compile(r"^(?:acknowledg|contents|table of contents|exercises|problems|目录|致谢|习题|练习)", re.IGNORECASE)
_STOPWORDS = frozenset(
    "the a an and or of to in on for with by from as at is are was were be been this that these those it its we our "
    "they their which who whom can may not also such than then there here into over under more most each other when "
    "where how what all any both only one two has have had do does did so if but".split()
)
RUNNING_HEADER_TIMES = 3  # a short line seen this often is a page header or footer


@dataclass(frozen=True)
class Figure:
    path: str  # as the document references it
    caption: str  # the caption's first sentence


@dataclass(frozen=True)
class Section:
    heading: str
    level: int  # 1 for top-level sections
    paragraphs: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()


@dataclass(frozen=True)
class ParsedDocument:
    title: str | None
    sections: tuple[Section, ...]


def plain(text: str) -> str:
    """Text without Markdown or HTML markup, NFKC, with single spaces (none between CJK characters)."""
    text = _MARKUP.sub(lambda m: m.group(1) or "", _DROPPED_MARKUP.sub("", _CONTROL.sub("", text)))
    return _CJK_GAP.sub("", normalize_text(text))


def _heading(line: str) -> tuple[int | None, str] | None:
    """(level, text) when the line is a heading; level None: an unnumbered bold line, a level below the last."""
    raw = line.strip()
    markdown = _MD_HEADING.match(raw)
    bold = bool(_BOLD_ONLY.match(raw))
    text = plain(markdown.group(2) if markdown else raw)
    numbered = _NUMBERED.match(text)
    rest = numbered.group(2) if numbered else text
    capitals = bool(_ALL_CAPS.match(text))
    landmark = len(text.split()) <= 3 and bool(
        _STOP_SECTIONS.match(text) or _SKIP_SECTIONS.match(text)
    )  # "Exercises" alone on a line
    if not _heading_like(rest) or not (markdown or bold or numbered or capitals or landmark):
        return None
    if numbered:
        return numbered.group(1).count(".") + 1, rest
    return (len(markdown.group(1)) if markdown else 1 if capitals or landmark else None), rest


def _heading_like(text: str) -> bool:
    words = text.split()
    letters = sum(ch.isalpha() for ch in text)
    return (
        1 <= len(words) <= 12
        and len(text) <= 80
        and letters >= 2
        and (text[0].isupper() or text[0].isdigit() or bool(CJK.match(text)))
        and (any(len(w) >= 3 and w.isalpha() for w in words) or len(CJK.findall(text)) >= 2)
        and not re.search(r"[.。:;,，]$|\.\s?\.|…|\s[\d.]+$", text)
    )


def _figure(lines: list[str], start: int, path: str) -> Figure | None:
    """The image at lines[start] with the caption printed below it (within a few lines), if any."""
    for i in range(start + 1, min(len(lines), start + 30)):
        if _heading(lines[i]):
            return None
        text = plain(lines[i])
        if _CAPTION.match(text):
            paragraph = [text]
            for following in lines[i + 1 :]:
                if not following.strip():
                    break
                paragraph.append(plain(following))
            first = sentences(" ".join(paragraph))[0]
            whole = (
                first[-1:] in ".。" and len(first) <= 200 and first.count("(") == first.count(")") and not _ARTIFACT.search(first)
            )
            return Figure(path, first) if whole else None
    return None


@lru_cache(maxsize=8)
def parse_document(markdown: str) -> ParsedDocument:
    """The document's title and sections (cached: a worker's rollouts often read the same corpus document)."""
    lines = [line for line in markdown.splitlines() if not _PAGE_MARK.match(line.strip())]
    texts = [plain(line) for line in lines]
    seen = Counter(text for text in texts if text)
    headers = {text for text, n in seen.items() if n >= RUNNING_HEADER_TIMES and len(text) <= 100}
    title_parts: list[str] = []
    sections: list[tuple[str, int, list[str], list[Figure]]] = []  # heading, level, paragraphs, figures
    paragraph: list[str] = []
    read_text = False  # any text but the opening headings seen yet
    level = 1  # of the last numbered (or Markdown, or all-capital) heading

    def close_paragraph() -> None:
        if paragraph and sections:
            sections[-1][2].append(_join(paragraph))
        paragraph.clear()

    for i, (line, text) in enumerate(zip(lines, texts)):
        image = _IMAGE.search(line)
        if image:
            close_paragraph()
            figure = _figure(lines, i, image.group(1))
            if figure and sections:
                sections[-1][3].append(figure)
            continue
        if not text or text in headers:
            close_paragraph()
            continue
        found = _heading(line)
        if found and not read_text and _MD_HEADING.match(line.strip()) and len(title_parts) < 3:
            title_parts.append(found[1])  # the heading lines the document opens with: its title
            continue
        read_text = True
        if found:
            close_paragraph()
            if _STOP_SECTIONS.match(found[1]):
                break
            level = found[0] or level
            sections.append((found[1], level if found[0] else level + 1, [], []))
            continue
        paragraph.append(text)
    close_paragraph()
    kept = tuple(Section(h, n, tuple(ps), tuple(fs)) for h, n, ps, fs in sections if not _SKIP_SECTIONS.match(h))
    return ParsedDocument(" ".join(title_parts) or None, kept)


def _join(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if out.endswith("-") and line[:1].islower():
            out = out[:-1] + line  # a word hyphenated at the line end
        elif out and CJK.match(out[-1]) and CJK.match(line[0]):
            out += line
        else:
            out = f"{out} {line}".strip()
    return out


def sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences (abbreviations such as "et al." and "Fig." do not end one)."""
    out: list[str] = []
    for piece in (p.strip() for p in _SPLIT.split(paragraph)):
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out


def whole_sentence(sentence: str, language: str) -> bool:
    """A sentence that reads as a bullet on its own: complete, in the deck's language, not a formula or a caption."""
    cjk = len(CJK.findall(sentence))
    if _MATH.search(sentence) or "http" in sentence or "@" in sentence or "…" in sentence or ".." in sentence:
        return False
    if sentence.count("(") != sentence.count(")") or sentence.count("（") != sentence.count("）") or _CAPTION.match(sentence):
        return False
    words = sentence.split()
    variables = sum(len(w.strip(",.;:()")) == 1 and w.strip(",.;:()").isalpha() and w not in ("a", "A", "I") for w in words)
    if language == "zh":
        return (
            12 <= cjk
            and len(sentence) <= 90
            and sentence[-1] in "。！？."
            and bool(CJK.match(sentence))
            and not _VARIABLE.search(sentence)
            and not _ARTIFACT.search(sentence)
        )
    return (
        cjk == 0
        and 8 <= len(words) <= 32
        and len(sentence) <= 210
        and sentence[0].isupper()
        and sentence[-1] in ".!?"
        and variables <= 1
        and not _ARTIFACT.search(sentence)
    )


@lru_cache(maxsize=2048)
def section_sentences(section: Section, language: str) -> tuple[str, ...]:
    """The section's whole sentences in `language`; a paragraph that continues the one before (a formula or a
    page break between) loses its first, cut, sentence."""
    found: list[str] = []
    previous = ""
    for paragraph in section.paragraphs:
        pieces = sentences(paragraph)
        if previous and previous[-1] not in ".!?。！？:：":
            pieces = pieces[1:]
        found += [_CITATION.sub("", s).strip() for s in pieces]
        previous = paragraph
    return tuple(s for s in found if whole_sentence(s, language))


def terms(sentence: str) -> set[str]:
    """Content words (lower case, plural s dropped) and CJK character bigrams: what TextRank compares."""
    words = {w.rstrip("s") for w in re.findall(r"[a-z][a-z-]{2,}", sentence.lower()) if w not in _STOPWORDS}
    runs = re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", sentence)
    return words | {run[i : i + 2] for run in runs for i in range(len(run) - 1)}


def textrank(items: list[str], damping: float = 0.85, iterations: int = 40) -> list[float]:
    """TextRank scores: PageRank over sentences linked by shared terms, normalised by their lengths."""
    n = len(items)
    if n < 2:
        return [1.0] * n
    bags = [terms(s) for s in items]
    weights = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            shared = len(bags[i] & bags[j])
            if shared:
                weights[i, j] = weights[j, i] = shared / (math.log(len(bags[i]) + 1) + math.log(len(bags[j]) + 1))
    totals = weights.sum(axis=1, keepdims=True)
    moves = np.divide(weights, totals, out=np.full((n, n), 1 / n), where=totals > 0)
    scores = np.full(n, 1 / n)
    for _ in range(iterations):
        scores = (1 - damping) / n + damping * moves.T @ scores
    return scores.tolist()


def similar(a: str, b: str, threshold: float = 0.5) -> bool:
    left, right = terms(a), terms(b)
    return bool(left and right) and len(left & right) / len(left | right) >= threshold


def key_sentences(items: list[str], count: int, taken: list[str]) -> list[str]:
    """Up to `count` of `items` by TextRank, none like one already `taken` or chosen, in document order."""
    scores = textrank(items)
    chosen: list[int] = []
    for i in sorted(range(len(items)), key=lambda k: -scores[k]):
        if len(chosen) == count:
            break
        if not any(similar(items[i], other) for other in [*taken, *(items[c] for c in chosen)]):
            chosen.append(i)
    return [items[i] for i in sorted(chosen)]
