"""How the content gate reads a deck: each slide's text as a reader takes it in, from one of two sources.

- The deck's own layout, when the rollout recorded it (`deck_text.json`, written at export from
  Chromium's DOM: deck/text.py): each text block comes with the role its elements give it: heading,
  prose, table, code, figure (svg, canvas, chart, diagram, formula) or furniture (header, footer, nav,
  page number, logo).
- The PDF alone (PyMuPDF), where the DOM is gone: a block set in a monospace font is code, one set in
  a math font a formula (figure); a short one (a label, a tick) in or by a vector drawing of several
  strokes (a chart, a diagram) is a figure, one set in columns (spans on one baseline far apart: a
  table row) a table cell, however long; the rest is prose.

Either gives a `Page` per slide, and `slides_of` reads them alike: furniture is also what sits at the
slide's top or bottom edge in smaller type than the heading and is a page number, or recurs at the same
place on most slides, or on two or more in finer print than the slide's prose (a footer on a few slides);
a bare number (a tick, a value, "42%") and a formula in plain type ("E = mc2") are figures, not sentences,
and so are the labels of a diagram, whatever it is built of (short blocks in one type size side by side);
the heading is the heading-role text in the largest type, or, without any, the largest type among the prose
(its first block when all is one size), and whether it stands mid-slide, as a divider's does, is noted.
Pictures count when they cover 2-90% of the slide (not a logo, not a backdrop).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from core.language import normalize_text
from core.pdf import pymupdf
from core.records import ArtifactError
from filters.constraints import read_pdf

ROLES = ("heading", "prose", "table", "code", "figure", "furniture")
NOT_PROSE = ("table", "code", "figure")  # content a reader looks at, not sentences a reader reads
HEADING_RATIO = 1.15  # the largest type is a heading when it is this much larger than the smallest
EDGE = 0.12  # the top and bottom bands of a slide (share of its height) where furniture sits
PICTURE_SHARE = (0.02, 0.9)  # a picture smaller than this is a logo or an icon, larger a backdrop
LABEL_WORDS = 6  # text this short labels a diagram: in or by a vector drawing (PDF), or in boxes side by side
LABEL_REACH = 24  # PDF: pt around a drawing where its labels lie (ticks left of the axis, labels under the bars)
DRAWING_STROKES = 4  # PDF: strokes and fills a drawing has at least (a chart, a diagram; not a card, a rule)
MIDDLE = (0.3, 0.7)  # the band of a slide's height where a divider's heading stands (a content slide's is above)
STACK_REACH = 3.0  # a diagram's boxes one above another lie this many label heights apart at most

Box = tuple[float, float, float, float]  # x, y, width, height as shares of the slide's width and height

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"  # kana, CJK ideographs, hangul
CJK_CHAR = re.compile(rf"[{CJK}]")
_PAGE_NUMBER = re.compile(
    r"(?:(?:page|slide|p\.)\s*)?\d{1,3}(?:\s*(?:/|of|\|)\s*\d{1,3})?|[-–—]\s*\d{1,3}\s*[-–—]|第\s*\d{1,3}\s*页(?:\s*/?\s*共\s*\d{1,3}\s*页)?",
    re.IGNORECASE,
)
_QUANTITY = r"[~≈<>±+\-−]?[$€£¥]?\d[\d.,:]*\s?(?:%|‰|[x×]|[A-Za-z]{1,3}|[万亿倍年月日])?"
_BARE_NUMBER = re.compile(rf"{_QUANTITY}(?:\s*(?:[-–—/~]|to)\s*{_QUANTITY})?")
_DIGITS = re.compile(r"\d+")
_MONO_FONT = re.compile(r"mono|courier|consol|menlo|monaco|code", re.IGNORECASE)
_MATH_FONT = re.compile(r"math|katex|cmmi|cmsy|cmex|stix", re.IGNORECASE)
_RELATION = re.compile(r"[=≈≠≤≥<>∈∉⊂⊆∝≡]")
_LONG_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{3,}")
_FUNCTION = re.compile(r"log|ln|exp|sin|cos|tan|max|min|sum|lim|det|arg(?:max|min)|softmax|sqrt", re.IGNORECASE)


@dataclass(frozen=True)
class SlideText:
    number: int  # from 1
    heading: str
    items: tuple[str, ...]  # prose: bullets, paragraphs, captions
    images: int = 0  # pictures that are content
    figures: tuple[str, ...] = ()  # the text of tables, code, charts, diagrams and formulas: content, not prose
    centred: bool = False  # its heading stands in the middle of the slide, where a divider's is set, not at its top

    @property
    def body(self) -> str:
        return " ".join(self.items)

    @property
    def text(self) -> str:
        """The heading and the prose: what the slide says in sentences."""
        return " ".join((self.heading, *self.items)).strip()


@dataclass(frozen=True)
class Block:
    text: str
    box: Box
    size: float  # type size, compared within a slide only
    role: str  # one of ROLES

    @property
    def centre(self) -> tuple[float, float]:
        return self.box[0] + self.box[2] / 2, self.box[1] + self.box[3] / 2


@dataclass(frozen=True)
class Page:
    number: int  # from 1
    blocks: tuple[Block, ...]
    pictures: tuple[Box, ...] = ()


# ---------------------------------------------------------------- the deck's own layout


def read_layout(path: Path) -> Any:
    """A deck_text.json's content; ArtifactError when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: not a readable deck text file ({exc})") from exc


def layout_pages(layout: Any, source: str) -> list[Page]:
    """The pages of a deck's text (deck/text.py) read from `source`; ArtifactError when it is malformed or a
    slide's text was not read."""
    try:
        slides = layout["slides"]
        unread = [s["file"] for s in slides if "error" in s]
        pages = [] if unread else [_layout_page(n, s) for n, s in enumerate(slides, start=1)]
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(f"{source}: not a readable deck text ({exc})") from exc
    if unread:
        raise ArtifactError(f"{source}: the text of {', '.join(unread)} was not read")
    if not pages:
        raise ArtifactError(f"{source}: no slides")
    return pages


def _layout_page(number: int, slide: dict[str, Any]) -> Page:
    width, height = slide["size"]

    def share(box: Sequence[float]) -> Box:
        return box[0] / width, box[1] / height, box[2] / width, box[3] / height

    blocks = [Block(_lines(b["text"].split("\n")), share(b["box"]), float(b["size"]), _role(b["role"])) for b in slide["blocks"]]
    return Page(number, tuple(b for b in blocks if b.text), tuple(share(p) for p in slide["pictures"]))


def _role(role: str) -> str:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    return role


# ---------------------------------------------------------------- the PDF alone


def pdf_pages(pdf_path: Path) -> list[Page]:
    """One Page per PDF page; raises UnusablePDF when the PDF cannot be read."""
    return read_pdf(pdf_path, lambda doc: [_pdf_page(n, page) for n, page in enumerate(doc.pages(), start=1)])


def _pdf_page(number: int, page: pymupdf.Page) -> Page:
    width, height = page.rect.width, page.rect.height

    def share(r: pymupdf.Rect) -> Box:
        return r.x0 / width, r.y0 / height, r.width / width, r.height / height

    drawings = _drawings(page)
    found = []
    for lines, in_columns in _text_blocks(page):
        spans = [s for line in lines for s in line if s["text"].strip()]
        text = _lines(["".join(s["text"] for s in line) for line in lines])
        if spans and text:
            rect = pymupdf.Rect(spans[0]["bbox"])
            for span in spans[1:]:
                rect |= span["bbox"]
            found.append((text, rect, spans, in_columns))
    largest = max((s["size"] for _, _, spans, _ in found for s in spans), default=0.0)
    blocks = []
    for text, rect, spans, in_columns in found:
        size = max(s["size"] for s in spans)
        cells = in_columns and size < 0.9 * largest  # a heading beside a brand name is no table cell
        blocks.append(Block(text, share(rect), size, _pdf_role(text, rect, spans, cells, drawings)))
    images = [pymupdf.Rect(info["bbox"]) for info in page.get_image_info()]
    return Page(number, tuple(blocks), tuple(share(r) for r in images + drawings))


def _text_blocks(page: pymupdf.Page) -> list[tuple[list[list[dict[str, Any]]], bool]]:
    """PyMuPDF's text blocks as lines of spans, and whether they were set in columns. PyMuPDF puts text on one
    baseline in one block however far apart (a table row, a chart's labels, a footer and its page number): such
    a block gives a block per line and per group of spans that stand apart."""
    out: list[tuple[list[list[dict[str, Any]]], bool]] = []
    for block in page.get_text("dict", flags=pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES)["blocks"]:
        lines = [line for line in block.get("lines", ()) if line["spans"]]
        groups = [_apart(line["spans"]) for line in lines]
        side_by_side = any(_beside(a["bbox"], b["bbox"]) for a, b in itertools.combinations(lines, 2))
        if side_by_side or any(len(g) > 1 for g in groups):
            out += [([group], True) for line_groups in groups for group in line_groups]
        elif lines:
            out.append(([line["spans"] for line in lines], False))
    return out


def _beside(a: Sequence[float], b: Sequence[float]) -> bool:
    """Two lines on one baseline: their heights overlap by half."""
    return min(a[3], b[3]) - max(a[1], b[1]) > 0.5 * min(a[3] - a[1], b[3] - b[1])


def _apart(spans: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A line's spans in groups: a gap wider than the type size starts a new group."""
    groups: list[list[dict[str, Any]]] = []
    for span in spans:
        if groups and span["bbox"][0] - groups[-1][-1]["bbox"][2] <= span["size"]:
            groups[-1].append(span)
        else:
            groups.append([span])
    return groups


def _drawings(page: pymupdf.Page) -> list[pymupdf.Rect]:
    """The areas of vector drawings made of several strokes (charts, diagrams), each one rectangle: strokes and
    fills within 6 pt of each other joined, backdrops over most of the page left out."""
    page_area = page.rect.width * page.rect.height
    rects = [pymupdf.Rect(d["rect"]) for d in page.get_drawings()]
    groups: list[tuple[pymupdf.Rect, int]] = []  # (area grown by 6 pt, strokes)
    for rect in (r for r in rects if r.width * r.height < PICTURE_SHARE[1] * page_area):
        grown, strokes = rect + (-6, -6, 6, 6), 1
        touching = [g for g in groups if grown.intersects(g[0])]
        for area, count in touching:
            grown |= area
            strokes += count
        groups = [g for g in groups if all(g is not t for t in touching)] + [(grown, strokes)]
    return [area + (6, 6, -6, -6) for area, strokes in groups if strokes >= DRAWING_STROKES]


def _pdf_role(text: str, rect: pymupdf.Rect, spans: list[dict[str, Any]], in_columns: bool, drawings: list[pymupdf.Rect]) -> str:
    if all(_MONO_FONT.search(s["font"]) or s["flags"] & pymupdf.TEXT_FONT_MONOSPACED for s in spans):
        return "code"
    if any(_MATH_FONT.search(s["font"]) for s in spans):
        return "figure"
    if in_columns:
        return "table"
    centre = (rect.tl + rect.br) / 2
    near = any(centre in area + (-LABEL_REACH, -LABEL_REACH, LABEL_REACH, LABEL_REACH) for area in drawings)
    return "figure" if near and _words(text) <= LABEL_WORDS else "prose"


def _words(text: str) -> int:
    """Latin words and CJK characters (two to a word)."""
    return len(CJK_CHAR.sub(" ", text).split()) + math.ceil(len(CJK_CHAR.findall(text)) / 2)


def _lines(lines: Sequence[str]) -> str:
    """A block's lines as one text: CJK lines glued, others joined by a space."""
    out = ""
    for line in (normalize_text(x) for x in lines):
        if not line:
            continue
        glued = out and CJK_CHAR.match(out[-1]) and CJK_CHAR.match(line[0])
        out = f"{out}{line}" if glued or not out else f"{out} {line}"
    return out


# ---------------------------------------------------------------- a deck read alike from either source


def slides_of(pages: Sequence[Page]) -> list[SlideText]:
    furniture = _furniture(pages)
    return [_slide(page, _roles(page, furniture)) for page in pages]


def _roles(page: Page, furniture: set[tuple[int, int]]) -> list[str]:
    roles = [_final_role(b, (page.number, i) in furniture) for i, b in enumerate(page.blocks)]
    labels = _diagram_labels(page, roles)
    return ["figure" if i in labels else role for i, role in enumerate(roles)]


def _final_role(block: Block, furniture: bool) -> str:
    if furniture:
        return "furniture"
    if block.role == "prose" and (_BARE_NUMBER.fullmatch(block.text) or _formula(block.text)):
        return "figure"
    return block.role


def _formula(text: str) -> bool:
    """A formula set in plain type ("E = mc2", "wt+1 = wt − α ∇L(wt)", "α ∈ (0, 1]"): a relation among letters and
    numbers, with one word at most (a name: "BLEU = 28.4"; functions aside) and no CJK."""
    words = [w for w in _LONG_WORD.findall(text) if not _FUNCTION.fullmatch(w)]
    return bool(_RELATION.search(text)) and len(words) <= 1 and not CJK_CHAR.search(text)


def _diagram_labels(page: Page, roles: Sequence[str]) -> set[int]:
    """The prose blocks that label a diagram's boxes, whatever it is built of (plain <div>s: no svg, no chart class):
    short blocks in one type size, smaller than the slide's largest, three or more linked side by side or one above
    another, two at least side by side (a list is one above another only). Labels already read as figures or cells
    (PDF: by a drawing, in columns) count as links; a bullet beside a diagram, in its own type size, does not join it."""
    largest = max((b.size for b in page.blocks), default=0.0)
    short = [
        i
        for i, (b, role) in enumerate(zip(page.blocks, roles))
        if role in ("prose", *NOT_PROSE) and b.size < 0.9 * largest and _words(b.text) <= LABEL_WORDS
    ]
    links: dict[int, set[int]] = {i: set() for i in short}
    beside: set[int] = set()
    for i, j in itertools.combinations(short, 2):
        a, b = page.blocks[i].box, page.blocks[j].box
        if min(page.blocks[i].size, page.blocks[j].size) < 0.9 * max(page.blocks[i].size, page.blocks[j].size):
            continue
        if _side_by_side(a, b):
            beside |= {i, j}
        if _side_by_side(a, b) or _stacked(a, b):
            links[i].add(j)
            links[j].add(i)
    diagrams = [group for group in _groups(links) if len(group) >= 3 and group & beside]
    return {i for group in diagrams for i in group if roles[i] == "prose"}


def _groups(links: dict[int, set[int]]) -> list[set[int]]:
    """The linked groups (connected components) of `links`."""
    groups: list[set[int]] = []
    for start in links:
        if any(start in group for group in groups):
            continue
        group, todo = set(), [start]
        while todo:
            i = todo.pop()
            if i not in group:
                group.add(i)
                todo += links[i]
        groups.append(group)
    return groups


def _gap(a0: float, a1: float, b0: float, b1: float) -> float:
    """The gap between two spans on one axis; negative where they overlap."""
    return max(a0, b0) - min(a1, b1)


def _side_by_side(a: Box, b: Box) -> bool:
    """Apart across, and on one row: their heights overlap or lie within half a line of each other."""
    across = _gap(a[0], a[0] + a[2], b[0], b[0] + b[2])
    return across >= 0 and _gap(a[1], a[1] + a[3], b[1], b[1] + b[3]) <= 0.5 * min(a[3], b[3])


def _stacked(a: Box, b: Box) -> bool:
    """One above the other in one column (half the narrower width shared), a few lines apart at most."""
    shared = -_gap(a[0], a[0] + a[2], b[0], b[0] + b[2])
    apart = _gap(a[1], a[1] + a[3], b[1], b[1] + b[3])
    return shared >= 0.5 * min(a[2], b[2]) and 0 <= apart <= STACK_REACH * min(a[3], b[3])


def _furniture(pages: Sequence[Page]) -> set[tuple[int, int]]:
    """(page, block) of the page numbers and of the text recurring at the same place on most slides, or on two
    or more in finer print than their prose, at the top or bottom edge and in smaller type than the slide's
    largest (a heading is never furniture)."""
    edge: dict[str, list[tuple[int, int, Block, bool]]] = {}
    for page in pages:
        largest = max((b.size for b in page.blocks), default=0.0)
        body = min((b.size for b in page.blocks if b.role == "prose" and not _at_edge(b)), default=largest)
        for i, block in enumerate(page.blocks):
            if block.role != "heading" and block.size < 0.9 * largest and _at_edge(block):
                fine_print = block.size < 0.9 * body
                edge.setdefault(_DIGITS.sub("#", block.text.lower()), []).append((page.number, i, block, fine_print))
    most = max(2, math.ceil(len(pages) / 2))
    found = set()
    for places in edge.values():
        for number, i, block, fine_print in places:
            (x, y) = block.centre
            alike = {n for n, _, b, _ in places if abs(b.centre[0] - x) <= 0.05 and abs(b.centre[1] - y) <= 0.02}
            if len(alike) >= (2 if fine_print else most) or _PAGE_NUMBER.fullmatch(block.text):
                found.add((number, i))
    return found


def _at_edge(block: Block) -> bool:
    return block.centre[1] < EDGE or block.centre[1] > 1 - EDGE


def _slide(page: Page, roles: list[str]) -> SlideText:
    blocks = [(b, role) for b, role in zip(page.blocks, roles) if role != "furniture"]
    headings = [b for b, role in blocks if role == "heading"]
    prose = [b for b, role in blocks if role in ("heading", "prose")]
    pool = headings or prose
    heading: list[Block] = []
    if pool:
        largest, smallest = max(b.size for b in pool), min(b.size for b in pool)
        heading = [b for b in pool if b.size >= 0.9 * largest] if headings or largest >= HEADING_RATIO * smallest else pool[:1]
    items = tuple(b.text for b in prose if all(b is not h for h in heading))
    figures = tuple(b.text for b, role in blocks if role in NOT_PROSE)
    pictures = sum(PICTURE_SHARE[0] <= w * h < PICTURE_SHARE[1] for _, _, w, h in page.pictures)
    centred = bool(heading) and all(MIDDLE[0] < b.centre[1] < MIDDLE[1] for b in heading)
    return SlideText(page.number, " ".join(b.text for b in heading), items, pictures, figures, centred)
