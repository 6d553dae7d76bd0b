"""The content gate's labelled set: decks written as YAML, built into decks, and the gate's figures on them.

    python -m tests.filters.content_set          # the thresholds on the tuning part; figures per part and source

Two kinds of deck (content_decks/README.md says what the set holds and where it came from):
- text decks (hand.yaml, scripted.yaml, hard.yaml), a heading and items per slide, built with PyMuPDF the
  way a rendered deck reads back (the heading in large type, every item its own text block, "[image]" a
  raster image): read from the PDF only;
- page decks (pages.yaml), HTML slides (content_pages.py) exported through Chromium with the project's
  deck export: read from the deck's layout (deck_text.json) and from its PDF alone.
Every deck belongs to one part, fixed in its file: `tune` (filters/config.py's content thresholds were
chosen on it: `sweep` shows how each one reads it) or `test` (kept back to measure them). A page deck's PDF
reading is not judged where the deck says what the PDF alone reads (`pdf_codes`): it is printed on its own.
"""

from __future__ import annotations

import asyncio
import io
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from PIL import Image

from core.pdf import pymupdf
from deck.config import DeckConfig, PptxMode
from deck.export import export_deck, page_reader
from filters.config import FiltersConfig
from filters.content import CODES, ContentReport, check_content
from filters.content_reading import SlideText, layout_pages, pdf_pages, read_layout, slides_of
from render.config import RenderConfig
from render.renderer import Renderer
from tests.filters.content_pages import write_slides

HERE = Path(__file__).parent / "content_decks"
TEXT_DECKS = ("hand.yaml", "scripted.yaml")
PAGE_DECKS = ("pages.yaml",)
CORE = TEXT_DECKS + PAGE_DECKS  # every good deck passes and every bad one fails with its codes
HARD = ("hard.yaml",)  # what rules cannot see: measured, not expected
PARTS = ("tune", "test")
SOURCES = ("layout", "pdf")
PAGE = (960.0, 540.0)
IMAGE = "[image]"
SWEEP = {  # filters/config.py's content thresholds and the values tried on the tuning part
    "content_duplicate_similarity": (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95),
    "content_repeat_min_tokens": (3, 4, 6, 8, 10, 12),
    "content_echo_tokens": (6, 8, 10, 12, 15, 20),
    "content_foreign_share": (0.2, 0.35, 0.5, 0.65, 0.8),
}


@dataclass(frozen=True)
class LabelledDeck:
    id: str
    file: str
    part: str  # one of PARTS
    source: str
    lang: str
    request: str
    codes: frozenset[str]  # what a reader rejects it for; empty: a good deck
    slides: tuple[Any, ...]  # text deck: (heading, item, ...) per slide; page deck: a mapping per slide
    furniture: Mapping[str, str] = field(default_factory=dict)  # page decks: footer, header, number
    pdf_codes: frozenset[str] | None = None  # page decks the PDF alone cannot read right: what it reads (not judged)

    @property
    def paged(self) -> bool:
        return self.file in PAGE_DECKS


@dataclass(frozen=True)
class Reading:
    """One deck as the gate read it from one source, and its report."""

    deck: LabelledDeck
    source: str  # one of SOURCES
    slides: tuple[SlideText, ...]
    report: ContentReport

    @property
    def judged(self) -> bool:
        """False for a PDF reading of what the PDF alone cannot tell (README, "not judged")."""
        return self.source != "pdf" or self.deck.pdf_codes is None

    @property
    def expected(self) -> frozenset[str]:
        """The codes this reading must give: the labels, or where not judged, what the PDF alone is known to read."""
        known = self.deck.pdf_codes if self.source == "pdf" else None
        return self.deck.codes if known is None else known

    def check(self, cfg: FiltersConfig) -> ContentReport:
        return check_content(self.slides, cfg, self.deck.lang, self.deck.request)


def load_set(files: Sequence[str] = CORE, part: str | None = None) -> list[LabelledDeck]:
    decks = []
    for name in files:
        for entry in yaml.safe_load((HERE / name).read_text(encoding="utf-8")):
            unknown = set(entry["codes"]).union(entry.get("pdf_codes", ())) - set(CODES)
            if unknown or entry.get("part") not in PARTS:
                raise ValueError(f"{name}: deck {entry['id']}: unknown codes {sorted(unknown)} or part {entry.get('part')!r}")
            slides = tuple(s if name in PAGE_DECKS else tuple(str(x) for x in s) for s in entry["slides"])
            deck = LabelledDeck(
                entry["id"],
                name,
                entry["part"],
                entry["source"],
                entry["lang"],
                entry["request"],
                frozenset(entry["codes"]),
                slides,
                entry.get("furniture", {}),
                frozenset(entry["pdf_codes"]) if "pdf_codes" in entry else None,
            )
            decks.append(deck)
    return [d for d in decks if part in (None, d.part)]


# ---------------------------------------------------------------- building the decks


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (160, 90), (40, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def _font(text: str) -> str:
    return "helv" if all(ord(ch) < 0x100 for ch in text) else "china-s"  # the CJK font for anything past Latin-1


def build_pdf(deck: LabelledDeck, path: Path) -> Path:
    """A text deck's PDF, made with PyMuPDF."""
    doc = pymupdf.open()
    picture = _png()
    for heading, *items in deck.slides:
        page = doc.new_page(width=PAGE[0], height=PAGE[1])
        page.insert_textbox(pymupdf.Rect(50, 30, 910, 110), heading, fontname=_font(heading), fontsize=30)
        y = 120.0
        for item in items:
            if item == IMAGE:
                page.insert_image(pymupdf.Rect(600, y, 880, y + 150), stream=picture)
                y += 160
                continue
            height = 22 * (len(item) // 45 + 1) + 8
            if page.insert_textbox(pymupdf.Rect(70, y, 900, y + height), item, fontname=_font(item), fontsize=15) < 0:
                raise ValueError(f"{deck.id}: item does not fit its box: {item[:40]!r}")
            y += height + 10
    doc.save(path)
    doc.close()
    return path


async def export_pages(renderer: Renderer, decks: Sequence[LabelledDeck], folder: Path) -> dict[str, Path]:
    """Each page deck exported as the pipeline exports one: deck id -> its workspace (deck.pdf, deck_text.json)."""

    async def export(deck: LabelledDeck) -> Path:
        workspace = folder / deck.id
        slides = write_slides(list(deck.slides), deck.lang, deck.furniture, workspace)
        png_dir = workspace / "previews"
        await export_deck(
            renderer, slides, "16:9", workspace / "deck.pdf", png_dir=png_dir, text_path=workspace / "deck_text.json"
        )
        return workspace

    workspaces = await asyncio.gather(*(export(d) for d in decks))
    return {d.id: w for d, w in zip(decks, workspaces)}


def read(deck: LabelledDeck, pdf: Path, layout: Path | None = None) -> Reading:
    """The deck read from its `layout` (deck_text.json) when given, else from its PDF, and checked."""
    slides = tuple(slides_of(layout_pages(read_layout(layout), str(layout)) if layout else pdf_pages(pdf)))
    return Reading(deck, "layout" if layout else "pdf", slides, check_content(slides, FiltersConfig(), deck.lang, deck.request))


def read_page_deck(deck: LabelledDeck, workspace: Path) -> list[Reading]:
    """A page deck read both ways: from its layout and from its PDF alone."""
    pdf = workspace / "deck.pdf"
    return [read(deck, pdf, workspace / "deck_text.json"), read(deck, pdf)]


async def read_all(files: Sequence[str], folder: Path) -> list[Reading]:
    """Every deck of `files` built and read from every source it has (page decks through a Chromium of their own)."""
    decks = load_set(files)
    readings = [read(d, build_pdf(d, folder / f"{d.id}.pdf")) for d in decks if not d.paged]
    paged = [d for d in decks if d.paged]
    if paged:
        reader = page_reader(DeckConfig(pptx_mode=PptxMode.picture))
        async with Renderer(RenderConfig(max_concurrent=4, max_pages=4), roots=[folder], read_page=reader) as renderer:
            workspaces = await export_pages(renderer, paged, folder)
        readings += [r for d in paged for r in read_page_deck(d, workspaces[d.id])]
    return readings


# ---------------------------------------------------------------- the figures


def figures(readings: Sequence[Reading]) -> dict[str, tuple[int, int, int]]:
    """code -> (true positives, false positives, false negatives) over the readings."""
    found = {}
    for code in CODES:
        flagged = [(r.deck, code in r.report.failed) for r in readings]
        found[code] = (
            sum(hit and code in deck.codes for deck, hit in flagged),
            sum(hit and code not in deck.codes for deck, hit in flagged),
            sum(not hit and code in deck.codes for deck, hit in flagged),
        )
    return found


def table(readings: Sequence[Reading]) -> str:
    good = [r for r in readings if not r.deck.codes]
    bad = [r for r in readings if r.deck.codes]
    passed = sum(r.report.passed for r in good)
    exact = sum(set(r.report.failed) == r.deck.codes for r in bad)
    lines = [
        f"good decks passed {passed}/{len(good)}, bad decks with exactly their codes {exact}/{len(bad)}",
        "",
        "| check | labelled | flagged | precision | recall |",
        "|---|---:|---:|---:|---:|",
    ]
    for code, (tp, fp, fn) in figures(readings).items():
        precision = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
        recall = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
        lines.append(f"| {code} | {tp + fn} | {tp + fp} | {precision} | {recall} |")
    return "\n".join(lines)


def misses(readings: Sequence[Reading]) -> list[str]:
    return [
        f"  {r.deck.id} ({r.source}): labelled {sorted(r.deck.codes)}, flagged {r.report.failed}"
        for r in readings
        if set(r.report.failed) != r.deck.codes
    ]


def sweep(readings: Sequence[Reading]) -> str:
    """How many readings each value of each threshold gets wrong (codes other than the labels)."""
    lines = ["| threshold | readings wrong at each value |", "|---|---|"]
    for name, values in SWEEP.items():
        wrong = [sum(set(r.check(FiltersConfig(**{name: v})).failed) != r.deck.codes for r in readings) for v in values]
        default = getattr(FiltersConfig(), name)
        lines.append(f"| {name} (now {default}) | {', '.join(f'{v}: {n}' for v, n in zip(values, wrong))} |")
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        core = asyncio.run(read_all(CORE, Path(folder)))
        hard = asyncio.run(read_all(HARD, Path(folder)))
    judged = [r for r in core if r.judged]
    tune = [r for r in judged if r.deck.part == "tune"]
    print(f"## The thresholds on the tuning part ({len(tune)} readings)\n\n{sweep(tune)}\n")
    for part in PARTS:
        for source in SOURCES:
            chosen = [r for r in judged if r.deck.part == part and r.source == source]
            print(f"## {part} part, read from the {source} ({len({r.deck.id for r in chosen})} decks)\n\n{table(chosen)}\n")
            print("\n".join(misses(chosen)), end="\n\n" if misses(chosen) else "")
    unjudged = [r for r in core if not r.judged]
    print(f"## not judged: the PDF alone cannot tell ({len(unjudged)} decks, against their labels)\n\n{table(unjudged)}\n")
    print("\n".join(misses(unjudged)), end="\n\n" if misses(unjudged) else "")
    print(f"## hard cases, measured ({len(hard)} decks, the PDF)\n\n{table(hard)}\n")
    print("\n".join(misses(hard)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
