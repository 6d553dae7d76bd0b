"""A deck's slides as the judges and the diversity encoder see them.

A deck is one of: an exported workspace (deck_defects.json + previews/ + deck.pdf, as
rollouts leave them), a PDF (pages rendered to PNG), a folder of slide images, or one
image. Each slide carries its image, its PDF page's text layer and embedded images
when there is a PDF, the layout defects the renderer measured when there are some, and
the content checks (filters/content.py) that fail on it when there is a PDF (read from the
workspace's deck_text.json when there is one): what the content gate sees, so the scripted
judge sees it too.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.cli import InputError
from core.language import normalize_text
from core.pdf import pymupdf
from core.records import ArtifactError
from core.run.packed import RECORD, PackedRollout
from core.seams.deck import FILE as DEFECTS_FILE
from core.seams.deck import DeckReport
from core.seams.judging import PageFacts, SlideView
from filters.config import FiltersConfig
from filters.content import check_deck
from filters.content_reading import read_layout
from filters.quality import deck_slides

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
TEXT_FILE = "deck_text.json"  # the deck's text as the content gate reads it (deck/text.py), when the export wrote it
CSS_PX_PER_PT = 96 / 72  # Chromium prints 1280 px as 960 pt: pages render back at their CSS size


class DeckUnreadable(InputError, ValueError):
    """A deck path that holds no slides this module can read."""


def pdf_pages(pdf: Path) -> list[PageFacts]:
    try:
        with pymupdf.open(pdf, filetype="pdf") as doc:
            return [PageFacts(normalize_text(page.get_text()), len(page.get_images(full=True))) for page in doc]
    except (RuntimeError, ValueError) as exc:
        raise DeckUnreadable(f"{pdf}: not a readable PDF ({exc})") from exc


def load_deck(path: Path, render_dir: Path, language: str | None = None, request: str | None = None) -> list[SlideView]:
    """The slides at `path`; a PDF's pages are rendered under `render_dir` (once, by content hash). With a PDF,
    each slide carries the content checks that fail on it (`language` and `request` as the task gives them)."""
    if path.is_dir() and ((path / RECORD).is_file() or (path / DEFECTS_FILE).is_file()):
        deck, layout = _exported(path)
        slides, pdf = _workspace(path, deck), path / "deck.pdf"
        return _with_content(slides, pdf, language, request, layout) if pdf.is_file() else slides
    if path.is_file() and path.suffix.lower() == ".pdf":
        return _with_content(_pdf(path, render_dir), path, language, request)
    images = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if path.is_dir() else [path]
    images = [p for p in images if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES]
    if not images:
        raise DeckUnreadable(f"{path}: no deck here (expected a {DEFECTS_FILE} workspace, a PDF, or slide images)")
    return [SlideView(n, p.resolve()) for n, p in enumerate(images, start=1)]


def _with_content(
    slides: list[SlideView], pdf: Path, language: str | None, request: str | None, layout: Any = None
) -> list[SlideView]:
    try:
        failing = check_deck(pdf, FiltersConfig(), language, request, layout).codes_by_slide()
    except ArtifactError as exc:
        raise DeckUnreadable(str(exc)) from exc
    return [replace(s, content=tuple(failing.get(s.number, ()))) for s in slides]


def _exported(folder: Path) -> tuple[DeckReport, Any]:
    """An exported workspace's deck report and text: from its packed record (core.run.packed), else its files."""
    try:
        if (folder / RECORD).is_file():
            packed = PackedRollout.read(folder / RECORD)
            if packed.deck is None:
                raise ArtifactError(f"{folder / RECORD}: no deck")
            return packed.deck, packed.deck_text
        layout = folder / TEXT_FILE
        return DeckReport.read(folder / DEFECTS_FILE), read_layout(layout) if layout.is_file() else None
    except ArtifactError as exc:
        raise DeckUnreadable(str(exc)) from exc


def _workspace(folder: Path, deck: DeckReport) -> list[SlideView]:
    slides = deck_slides(deck)
    pdf = folder / "deck.pdf"
    pages = pdf_pages(pdf) if pdf.is_file() else []
    missing = [s.png for s in slides if not (folder / s.png).is_file()]
    if missing:
        raise DeckUnreadable(f"{folder}: slide image(s) missing: {', '.join(missing)}")
    return [
        SlideView(s.number, (folder / s.png).resolve(), pages[s.number - 1] if s.number <= len(pages) else None, s.measured)
        for s in slides
    ]


def _pdf(pdf: Path, render_dir: Path) -> list[SlideView]:
    pages = pdf_pages(pdf)
    if not pages:
        raise DeckUnreadable(f"{pdf}: the PDF has no pages")
    out = render_dir / hashlib.sha256(pdf.read_bytes()).hexdigest()[:16]
    pngs = [out / f"slide_{n:02d}.png" for n in range(1, len(pages) + 1)]
    if not all(p.is_file() for p in pngs):
        out.mkdir(parents=True, exist_ok=True)
        with pymupdf.open(pdf, filetype="pdf") as doc:
            for page, png in zip(doc, pngs):
                page.get_pixmap(matrix=pymupdf.Matrix(CSS_PX_PER_PT, CSS_PX_PER_PT)).save(png)
    return [SlideView(n, png, facts) for n, (png, facts) in enumerate(zip(pngs, pages), start=1)]
