"""Deck export: a folder of `slide_NN.html` files -> one PDF (a page per slide), PNG previews, a PPTX, and what
was measured per slide (deck_defects.json, core.seams.deck). Its command is `python -m agents.deck`.

Every slide goes through the shared Renderer; Chromium prints each page at the slide's exact
size (1280x720 px prints as 960x540 pt) and PyMuPDF merges the pages. The editable PPTX is
built from the layout the renderer read on each printed page (`deck/layout.py`); the deck's text
as a reader reads it, for the content gate, is read on the same pages (`deck/text.py`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from playwright.async_api import CDPSession, Page

from core.markdown_slides import slide_sections
from core.pdf import pymupdf
from core.seams.deck import DeckPptx, DeckReport, DeckSlide
from deck.config import DeckConfig, PptxMode
from deck.fidelity import CheckError, check
from deck.layout import SlideLayout, read_slide_layout
from deck.pptx import SlideSource, write_pptx
from deck.text import read_slide_text, write_deck_text
from render.renderer import PageReader, Renderer, RenderResult, aspect_size

log = logging.getLogger(__name__)

_SLIDE_FILE = re.compile(r"slide_(\d+)\.html?", re.IGNORECASE)


@dataclass(frozen=True)
class DeckExport:
    pdf: Path
    pptx: Path | None
    pngs: tuple[Path, ...]
    pages: int
    defects: int  # defects measured over all slides
    # Per slide, in order: measured defects and layout.
    results: tuple[RenderResult, ...] = ()
    fidelity: dict[str, Any] | None = None  # the PPTX's fidelity check (deck/fidelity.py), when it ran
    text: Path | None = None  # deck_text.json (deck/text.py), when asked for
    report: DeckReport | None = None  # per slide: measured defects and PPTX fidelity (core.seams.deck)


@dataclass(frozen=True)
class PageRead:
    """What the deck export reads on each printed page: the reader's text, and the layout for an editable PPTX."""

    text: dict[str, Any]
    layout: SlideLayout | None = None


def page_reader(deck: DeckConfig) -> PageReader:
    """What a renderer must read on each printed page for this deck export (`Renderer(read_page=...)`)."""
    editable = PptxMode(deck.pptx_mode) is PptxMode.editable

    async def read(page: Page, cdp: CDPSession) -> PageRead:
        text = await read_slide_text(page)
        return PageRead(text, await read_slide_layout(page, cdp) if editable else None)

    return read


def slide_files(slides_dir: Path) -> list[Path]:
    """The `slide_NN.html` files of a folder, by slide number."""
    if not slides_dir.is_dir():
        raise ValueError(f"{slides_dir}: not a folder")
    numbered = [(int(m.group(1)), p) for p in slides_dir.iterdir() if (m := _SLIDE_FILE.fullmatch(p.name))]
    if not numbered:
        raise ValueError(f"{slides_dir}: no slide_NN.html files")
    return [path for _, path in sorted(numbered)]


async def export_deck(
    renderer: Renderer,
    slides_dir: Path,
    aspect: str,
    pdf_path: Path,
    *,
    png_dir: Path,
    pptx_path: Path | None = None,
    workspace: Path | None = None,
    deck: DeckConfig | None = None,
    manuscript: str = "",
    text_path: Path | None = None,
    report_path: Path | None = None,
    image_format: str = "png",
) -> DeckExport:
    """Render every slide once (PNG + PDF page) and write the merged PDF and, if asked, the PPTX
    (its notes: the `manuscript` section of each slide, where known) and the deck's text as a reader
    reads it (`text_path`, deck/text.py), and what was measured per slide (`report_path`, a deck_defects.json).
    Previews are written as `image_format` (png, or webp: the same pixels, lossless).
    Assets may live anywhere under `workspace` (default: the slides folder's parent). An editable PPTX and the text need a renderer that reads them (`page_reader`)."""
    deck = deck or DeckConfig()
    size = aspect_size(aspect)
    files = slide_files(slides_dir)
    root = workspace or slides_dir.parent
    results = await asyncio.gather(
        *(
            renderer.render(
                f,
                aspect,
                png_path=png_dir / f"{f.stem}.{image_format}",
                workspace=root,
                want_pdf=True,
            )
            for f in files
        )
    )
    pages = await asyncio.to_thread(write_pdf, results, pdf_path)
    if text_path is not None:
        write_deck_text(files, [_read(r, "text").text for r in results], text_path)
    fidelity = None
    if pptx_path is not None:
        sources = pptx_sources(results, PptxMode(deck.pptx_mode), manuscript)
        await asyncio.to_thread(write_pptx, sources, size, pptx_path, root)
        if deck.check:
            fidelity = await asyncio.to_thread(_fidelity, pptx_path, pdf_path, deck)
    report = deck_report(results, aspect, root, PptxMode(deck.pptx_mode), fidelity)
    if report_path is not None:
        report.write(report_path)
    return DeckExport(
        pdf=pdf_path,
        pptx=pptx_path,
        pngs=tuple(r.png_path for r in results),
        pages=pages,
        defects=sum(len(r.defects) for r in results),
        results=tuple(results),
        fidelity=fidelity,
        text=text_path,
        report=report,
    )


def deck_report(
    results: Sequence[RenderResult], aspect: str, root: Path, mode: PptxMode, fidelity: dict[str, Any] | None
) -> DeckReport:
    """What the export measured, per slide (paths relative to `root`, the workspace), and the PPTX's fidelity."""
    per_slide = (fidelity or {}).get("slides", [])
    slides = [
        DeckSlide(
            _relative(r.html_path, root),
            _relative(r.png_path, root),
            r.defects,
            {k: v for k, v in per_slide[i].items() if k != "slide"} if i < len(per_slide) else None,
        )
        for i, r in enumerate(results)
    ]
    figures = None if fidelity is None else {k: v for k, v in fidelity.items() if k not in ("pptx", "pdf", "slides")}
    return DeckReport(aspect, tuple(slides), DeckPptx(mode.value, figures))


def _relative(path: Path, root: Path) -> str:
    path, root = path.resolve(), root.resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()


def pptx_sources(results: Sequence[RenderResult], mode: PptxMode, manuscript: str = "") -> list[SlideSource]:
    """What the PPTX writer needs of each rendered slide: its layout (editable mode), PNG and notes."""
    layouts: list[SlideLayout | None] = [None] * len(results)
    if mode is PptxMode.editable:
        layouts = [_read(r, "layout").layout for r in results]
    titles = [layout.data.get("title", "") if layout else "" for layout in layouts]
    notes = slide_sections(manuscript, titles) if manuscript.strip() else [""] * len(results)
    return [SlideSource(r.png_path, layout, note) for r, layout, note in zip(results, layouts, notes)]


def _read(result: RenderResult, what: str) -> PageRead:
    """What the renderer read on the slide's page; ValueError naming the slide when it did not read `what`."""
    read = result.page_data
    if not isinstance(read, PageRead) or getattr(read, what) is None:
        raise ValueError(
            f"no {what} was read for {result.html_path.name}: the export needs Renderer(read_page=page_reader(deck))"
        )
    return read


def _fidelity(pptx: Path, pdf: Path, deck: DeckConfig) -> dict[str, Any]:
    """The fidelity check's figures, or why it could not run (the export stands either way)."""
    try:
        return check(pptx, pdf, deck.soffice, deck.check_timeout_s)
    except CheckError as exc:
        log.warning("fidelity check of %s failed: %s", pptx, exc)
        return {"error": str(exc)}


def write_pdf(results: list[RenderResult], pdf_path: Path) -> int:
    """Merge the first page of each slide's PDF (overflowing content would print a second one)."""
    merged = pymupdf.open()
    for result in results:
        assert result.pdf is not None
        with pymupdf.open("pdf", result.pdf) as page_pdf:
            if page_pdf.page_count > 1:
                log.warning(
                    "%s prints %d pages; keeping the first",
                    result.html_path.name,
                    page_pdf.page_count,
                )
            merged.insert_pdf(page_pdf, from_page=0, to_page=0)
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    partial = pdf_path.with_name(f".{pdf_path.name}.part")
    merged.save(partial, garbage=4, deflate=True, use_objstms=1)  # objects shared by pages (fonts, images) once: ~40% smaller
    pages = merged.page_count
    merged.close()
    partial.replace(pdf_path)
    return pages
