"""Deck export: a folder of `slide_NN.html` files -> one PDF (a page per slide), PNG previews, a PPTX.

Run: `python -m agents.deck SLIDES_DIR --aspect 16:9 --pdf OUT.pdf [--pptx OUT.pptx] [--png-dir DIR]
[--pptx-mode editable|picture] [--manuscript FILE] [--check] [--text deck_text.json]`, and
`python -m agents.deck check DECK.pptx --against DECK.pdf [--json]` for the fidelity check alone.
Every slide goes through the shared Renderer; Chromium prints each page at the slide's exact
size (1280x720 px prints as 960x540 pt) and PyMuPDF merges the pages. The editable PPTX is
built from the layout the renderer read on each printed page (`deck/layout.py`); the deck's text
as a reader reads it, for the content gate, is read on the same pages (`deck/text.py`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from core.pdf import pymupdf
from playwright.async_api import CDPSession, Page

from core.seams.deck import DeckPptx, DeckReport, DeckSlide
from deck.config import DeckConfig, PptxMode

from render.config import RenderConfig
from core.cli import OneLineParser
from core.config import ConfigError
from core.markdown_slides import slide_sections
from deck.fidelity import BadInput, CheckError, check
from deck.pptx import SlideSource, write_pptx
from render.renderer import PageReader, Renderer, RenderError, RenderResult, aspect_size
from deck.layout import SlideLayout, read_slide_layout
from deck.text import read_slide_text, write_deck_text

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
) -> DeckExport:
    """Render every slide once (PNG + PDF page) and write the merged PDF and, if asked, the PPTX
    (its notes: the `manuscript` section of each slide, where known) and the deck's text as a reader
    reads it (`text_path`, deck/text.py), and what was measured per slide (`report_path`, a deck_defects.json).
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
                png_path=png_dir / f"{f.stem}.png",
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
    merged.save(partial, garbage=3, deflate=True)
    pages = merged.page_count
    merged.close()
    partial.replace(pdf_path)
    return pages


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if argv[:1] == ["check"]:
        return _check_main(argv[1:])
    parser = OneLineParser(prog="python -m agents.deck", description="Export slide_NN.html files to PDF, PNG and PPTX.")
    parser.add_argument("slides_dir", type=Path)
    parser.add_argument("--aspect", required=True, help="16:9, 4:3, A1, A2, A3 or A4")
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--pptx", type=Path)
    parser.add_argument("--pptx-mode", choices=[m.value for m in PptxMode], default=PptxMode.editable.value)
    parser.add_argument("--manuscript", type=Path, help="markdown whose sections become the slides' notes")
    parser.add_argument("--check", action="store_true", help="render the PPTX with LibreOffice and compare it with the PDF")
    parser.add_argument("--text", type=Path, help="write the deck's text as the content gate reads it (deck_text.json)")
    parser.add_argument("--png-dir", type=Path, help="default: previews/ beside the slides folder")
    parser.add_argument("--workspace", type=Path, help="root that assets may come from (default: the slides folder's parent)")
    args = parser.parse_args(argv)
    try:
        aspect_size(args.aspect)
        slide_files(args.slides_dir)
        manuscript = args.manuscript.read_text(encoding="utf-8") if args.manuscript else ""
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    png_dir = args.png_dir or args.slides_dir.parent / "previews"
    deck = DeckConfig(pptx_mode=PptxMode(args.pptx_mode), check=args.check and args.pptx is not None)
    try:
        export = asyncio.run(
            _export(args.slides_dir, args.aspect, args.pdf, png_dir, args.pptx, args.workspace, deck, manuscript, args.text)
        )
    except ConfigError as exc:  # found as Chromium starts: e.g. no jail for it on this machine
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    extra = f", {export.pptx} ({deck.pptx_mode.value})" if export.pptx else ""
    extra += f", {export.text}" if export.text else ""
    print(
        f"wrote {export.pdf} ({export.pages} pages){extra} and {len(export.pngs)} PNGs in {png_dir}; {export.defects} defects measured"
    )
    if export.fidelity is not None:
        print(_summary(export.fidelity))
    return 0


def _check_main(argv: list[str]) -> int:
    parser = OneLineParser(
        prog="python -m agents.deck check",
        description="How faithfully a PPTX reproduces its deck's PDF (rendered with LibreOffice).",
    )
    parser.add_argument("pptx", type=Path)
    parser.add_argument("--against", type=Path, required=True, metavar="PDF", help="the deck's PDF")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--soffice", default=DeckConfig.soffice, help="LibreOffice's command (default: soffice)")
    parser.add_argument("--timeout", type=float, default=DeckConfig.check_timeout_s, help="seconds LibreOffice may take")
    args = parser.parse_args(argv)
    try:
        figures = check(args.pptx, args.against, args.soffice, args.timeout)
    except CheckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, BadInput) else 1
    print(json.dumps(figures, ensure_ascii=False, indent=1) if args.json else _summary(figures))
    return 0


def _summary(figures: dict[str, Any]) -> str:
    if "error" in figures:
        return f"fidelity check: {figures['error']}"
    lines = [f"{'slide':>5} {'words':>6} {'kept':>6} {'median px':>9} {'max px':>7} {'lines changed':>13} {'ssim':>6}"]
    rows = [(str(s["slide"]), s) for s in figures["slides"]] + [("deck", figures["deck"])]
    for name, s in rows:
        spread = s["displacement_px"]
        lines.append(
            f"{name:>5} {s['words']:>6} {s['words_kept']:>6.1%} {spread['median']:>9.2f} {spread['max']:>7.2f} {s['line_count_changed']:>13} {s['ssim']:>6.3f}"
        )
    return (
        "\n".join(lines) + f"\n{figures['renderer']}, {figures['seconds']} s; within targets: {figures['deck']['within_targets']}"
    )


async def _export(
    slides_dir: Path,
    aspect: str,
    pdf: Path,
    png_dir: Path,
    pptx: Path | None,
    workspace: Path | None,
    deck: DeckConfig,
    manuscript: str,
    text: Path | None,
) -> DeckExport:
    async with Renderer(RenderConfig(), roots=[workspace or slides_dir.parent], read_page=page_reader(deck)) as renderer:
        return await export_deck(
            renderer,
            slides_dir,
            aspect,
            pdf,
            png_dir=png_dir,
            pptx_path=pptx,
            workspace=workspace,
            deck=deck,
            manuscript=manuscript,
            text_path=text,
        )


if __name__ == "__main__":
    sys.exit(main())
