"""`python -m agents.deck`: export a folder of slides, or check an exported PPTX (the library: deck.export).

    python -m agents.deck SLIDES_DIR --aspect 16:9 --pdf OUT.pdf [--pptx OUT.pptx] [--png-dir DIR]
        [--pptx-mode editable|picture] [--manuscript FILE] [--check] [--text deck_text.json]
    python -m agents.deck check DECK.pptx --against DECK.pdf [--json] [--locale en-US]    # the fidelity check alone

Exit status as every command's (core.cli): 2 for unusable input, 1 when rendering or the check failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

from core.cli import InputError, OneLineParser, run_command
from deck.config import DeckConfig, PptxMode
from deck.export import DeckExport, export_deck, page_reader, slide_files
from deck.fidelity import LOCALE, check, locale_tag
from render.config import RenderConfig
from render.renderer import Renderer, aspect_size

PROG = "python -m agents.deck"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if argv[:1] == ["check"]:
        return _check_main(argv[1:])
    parser = OneLineParser(prog=PROG, description="Export slide_NN.html files to PDF, PNG and PPTX.")
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
    return run_command(PROG, lambda: export(args))


def export(args: argparse.Namespace) -> int:
    try:
        aspect_size(args.aspect)
        slide_files(args.slides_dir)
        manuscript = args.manuscript.read_text(encoding="utf-8") if args.manuscript else ""
    except (ValueError, OSError) as exc:
        raise InputError(str(exc)) from exc
    png_dir = args.png_dir or args.slides_dir.parent / "previews"
    deck = DeckConfig(pptx_mode=PptxMode(args.pptx_mode), check=args.check and args.pptx is not None)
    # a ConfigError found as Chromium starts (no jail for it on this machine) is bad input; a RenderError a failure
    export = asyncio.run(
        _export(args.slides_dir, args.aspect, args.pdf, png_dir, args.pptx, args.workspace, deck, manuscript, args.text)
    )
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
        prog=f"{PROG} check",
        description="How faithfully a PPTX reproduces its deck's PDF (rendered with LibreOffice).",
    )
    parser.add_argument("pptx", type=Path)
    parser.add_argument("--against", type=Path, required=True, metavar="PDF", help="the deck's PDF")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--soffice", default=DeckConfig.soffice, help="LibreOffice's command (default: soffice)")
    parser.add_argument("--timeout", type=float, default=DeckConfig.check_timeout_s, help="seconds LibreOffice may take")
    parser.add_argument(
        "--locale",
        type=locale_tag,
        default=LOCALE,
        help=f"LibreOffice's locale (default: {LOCALE}, its own; under ja-JP or ko-KR it adds no space between Asian and other text)",
    )
    args = parser.parse_args(argv)

    def work() -> int:
        figures = check(args.pptx, args.against, args.soffice, args.timeout, args.locale)  # BadInput: exit 2; a CheckError: 1
        print(json.dumps(figures, ensure_ascii=False, indent=1) if args.json else _summary(figures))
        return 0

    return run_command(parser.prog, work)


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
        "\n".join(lines)
        + f"\n{figures['renderer']} ({figures['locale']}), {figures['seconds']} s; within targets: {figures['deck']['within_targets']}"
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
