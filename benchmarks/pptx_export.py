"""The editable PPTX: export time per slide against the picture PPTX, and fidelity per deck.

Run: `python -m benchmarks.pptx_export [--repeats 3] [--no-check]`. The decks are the test
fixtures' clean slides and the labelled set in tests/fixtures/pptx, one deck per aspect.
Each repeat exports every deck in both modes (`deck.pptx_mode=picture` and `editable`) on fresh
copies, so no render is reused, alternating which mode goes first; "export ms/slide" is the
export's wall time (renders, PDF, PPTX; layout reading in editable mode) over its slides, "cpu
ms/slide" the CPU this process and its browser spent on it, and "pptx ms/slide" the PPTX
writing alone (wall). A fresh browser per export; the first deck's first
export also pays for fontconfig look-ups (cached per process). Then LibreOffice renders each editable PPTX and
`python -m agents.deck check` compares it with the PDF: words kept, median and max word
displacement (px at 1280 wide), text blocks whose line count changed, SSIM, native tables and
pictures.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from deck.config import DeckConfig, PptxMode
from deck.export import export_deck, page_reader, pptx_sources
from deck.fidelity import check
from deck.pptx import write_pptx
from render.config import RenderConfig
from render.renderer import Renderer, aspect_size

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
_ASPECT = '<meta name="aspect" content="'


def decks() -> dict[str, list[Path]]:
    """Deck name -> its slides: the fixtures' clean slides and the labelled set, by aspect."""
    found: dict[str, list[Path]] = {}
    for name, files in (
        ("fixtures", sorted((FIXTURES / "slides").glob("clean_*.html"))),
        ("labelled", sorted((FIXTURES / "pptx").glob("*.html"))),
    ):
        for html in files:
            text = html.read_text(encoding="utf-8")
            aspect = text.split(_ASPECT, 1)[1].split('"', 1)[0] if _ASPECT in text else "16:9"
            found.setdefault(f"{name} {aspect}", []).append(html)
    return found


def workspace(slides: list[Path], root: Path) -> Path:
    """A workspace of slide_NN.html files whose `../assets` links resolve to the fixtures' assets."""
    shutil.copytree(FIXTURES / "assets", root / "assets")
    (root / "slides").mkdir()
    for number, html in enumerate(slides, 1):
        shutil.copy(html, root / "slides" / f"slide_{number:02d}.html")
    return root


def cpu_seconds() -> float:
    """Busy CPU of this process and its children (the Playwright driver, Chromium): steadier than
    wall time on a shared machine."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return total


async def export(slides: list[Path], aspect: str, mode: PptxMode, root: Path) -> tuple[float, float, float]:
    """(export wall ms, export CPU ms, PPTX-writing ms) per slide, of one export on fresh copies."""
    ws = workspace(slides, root)
    deck = DeckConfig(pptx_mode=mode)
    async with Renderer(RenderConfig(), roots=[ws], read_page=page_reader(deck)) as renderer:
        started, cpu = time.perf_counter(), cpu_seconds()
        done = await export_deck(
            renderer, ws / "slides", aspect, ws / "deck.pdf", png_dir=ws / "previews", workspace=ws, deck=deck
        )
        rendered = time.perf_counter()
        write_pptx(pptx_sources(done.results, mode), aspect_size(aspect), ws / "deck.pptx", ws)
        written, cpu = time.perf_counter(), cpu_seconds() - cpu
    n = len(slides)
    return (written - started) * 1000 / n, cpu * 1000 / n, (written - rendered) * 1000 / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-check", action="store_true", help="skip the LibreOffice fidelity check")
    args = parser.parse_args()
    print(f"{'deck':<16} {'slides':>6} {'mode':>9} {'export ms/slide':>16} {'cpu ms/slide':>13} {'pptx ms/slide':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        kept: dict[str, Path] = {}
        for name, slides in decks().items():
            aspect = name.split()[1]
            times: dict[PptxMode, list[tuple[float, float, float]]] = {PptxMode.picture: [], PptxMode.editable: []}
            for repeat in range(args.repeats):
                order = [PptxMode.picture, PptxMode.editable][:: 1 if repeat % 2 == 0 else -1]
                for mode in order:
                    root = Path(tmp) / f"{name.replace(' ', '_').replace(':', '-')}-{mode.value}-{repeat}"
                    times[mode].append(asyncio.run(export(slides, aspect, mode, root)))
                    if mode is PptxMode.editable:
                        kept[name] = root
            for mode, rows in times.items():
                wall, cpu, pptx = (statistics.median(r[i] for r in rows) for i in range(3))
                print(f"{name:<16} {len(slides):>6} {mode.value:>9} {wall:>16.0f} {cpu:>13.0f} {pptx:>14.1f}")
        if args.no_check:
            return
        print(
            f"\n{'deck':<16} {'words':>6} {'kept':>7} {'median px':>9} {'max px':>7} {'lines changed':>13} {'ssim':>6} {'tables':>6} {'pictures':>8}"
        )
        for name, root in kept.items():
            figures = check(root / "deck.pptx", root / "deck.pdf")["deck"]
            spread = figures["displacement_px"]
            print(
                f"{name:<16} {figures['words']:>6} {figures['words_kept']:>7.1%} {spread['median']:>9.2f} {spread['max']:>7.2f}"
                f" {figures['line_count_changed']:>13} {figures['ssim']:>6.3f} {figures['tables']:>6} {figures['pictures']:>8}"
            )


if __name__ == "__main__":
    main()
