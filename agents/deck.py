"""Deck export: a folder of `slide_NN.html` files -> one PDF (a page per slide), PNG previews, a PPTX.

Run: `python -m agents.deck SLIDES_DIR --aspect 16:9 --pdf OUT.pdf [--pptx OUT.pptx] [--png-dir DIR]`.
Every slide goes through the shared Renderer; Chromium prints each page at the slide's exact
size (1280x720 px prints as 960x540 pt) and PyMuPDF merges the pages.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from pptx import Presentation
from pptx.util import Emu

from agents.config import RenderConfig
from agents.inspect import OneLineParser
from agents.renderer import Renderer, RenderError, RenderResult, aspect_size

log = logging.getLogger(__name__)

_SLIDE_FILE = re.compile(r"slide_(\d+)\.html?", re.IGNORECASE)
_EMU_PER_PX = 9525  # 914400 EMU per inch / 96 px per inch


@dataclass(frozen=True)
class DeckExport:
    pdf: Path
    pptx: Path | None
    pngs: tuple[Path, ...]
    pages: int
    defects: int  # defects measured over all slides
    # Per slide, in order: measured defects and layout.
    results: tuple[RenderResult, ...] = ()


def slide_files(slides_dir: Path) -> list[Path]:
    """The `slide_NN.html` files of a folder, by slide number."""
    if not slides_dir.is_dir():
        raise ValueError(f"{slides_dir}: not a folder")
    numbered = [
        (int(m.group(1)), p)
        for p in slides_dir.iterdir()
        if (m := _SLIDE_FILE.fullmatch(p.name))
    ]
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
) -> DeckExport:
    """Render every slide once (PNG + PDF page) and write the merged PDF and, if asked, the PPTX.
    Assets may live anywhere under `workspace` (default: the slides folder's parent)."""
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
    if pptx_path is not None:
        await asyncio.to_thread(
            write_pptx, [r.png_path for r in results], size, pptx_path
        )
    return DeckExport(
        pdf=pdf_path,
        pptx=pptx_path,
        pngs=tuple(r.png_path for r in results),
        pages=pages,
        defects=sum(len(r.defects) for r in results),
        results=tuple(results),
    )


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


def write_pptx(pngs: list[Path], size: tuple[int, int], pptx_path: Path) -> None:
    """One full-slide picture per slide, on a slide of the deck's aspect ratio."""
    deck = Presentation()
    deck.slide_width = Emu(size[0] * _EMU_PER_PX)
    deck.slide_height = Emu(size[1] * _EMU_PER_PX)
    blank = deck.slide_layouts[6]
    for png in pngs:
        slide = deck.slides.add_slide(blank)
        slide.shapes.add_picture(
            str(png), 0, 0, width=deck.slide_width, height=deck.slide_height
        )
    pptx_path.parent.mkdir(parents=True, exist_ok=True)
    partial = pptx_path.with_name(f".{pptx_path.name}.part")
    deck.save(str(partial))
    partial.replace(pptx_path)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m agents.deck",
        description="Export slide_NN.html files to PDF, PNG and PPTX.",
    )
    parser.add_argument("slides_dir", type=Path)
    parser.add_argument("--aspect", required=True, help="16:9, 4:3, A1, A2, A3 or A4")
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--pptx", type=Path)
    parser.add_argument(
        "--png-dir", type=Path, help="default: previews/ beside the slides folder"
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        help="root that assets may come from (default: the slides folder's parent)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        aspect_size(args.aspect)
        slide_files(args.slides_dir)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    png_dir = args.png_dir or args.slides_dir.parent / "previews"
    try:
        export = asyncio.run(
            _export(
                args.slides_dir,
                args.aspect,
                args.pdf,
                png_dir,
                args.pptx,
                args.workspace,
            )
        )
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    extra = f", {export.pptx}" if export.pptx else ""
    print(
        f"wrote {export.pdf} ({export.pages} pages){extra} and {len(export.pngs)} PNGs in {png_dir}; {export.defects} defects measured"
    )
    return 0


async def _export(
    slides_dir: Path,
    aspect: str,
    pdf: Path,
    png_dir: Path,
    pptx: Path | None,
    workspace: Path | None,
) -> DeckExport:
    async with Renderer(RenderConfig()) as renderer:
        return await export_deck(
            renderer,
            slides_dir,
            aspect,
            pdf,
            png_dir=png_dir,
            pptx_path=pptx,
            workspace=workspace,
        )


if __name__ == "__main__":
    sys.exit(main())
