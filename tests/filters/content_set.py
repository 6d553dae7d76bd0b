"""The content gate's labelled set: decks as text (YAML), built into PDFs, and the gate's figures on them.

    python -m tests.filters.content_set          # precision and recall per check over the whole set

Each deck is built with PyMuPDF the way a rendered deck reads back: the heading in large
type, every item (a bullet, a caption) its own text block in smaller type, "[image]" a
raster image. See content_decks/README.md for what the set holds and where it came from.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pymupdf
import yaml
from PIL import Image

from filters.config import FiltersConfig
from filters.content import CODES, ContentReport, check_deck

HERE = Path(__file__).parent / "content_decks"
CORE = ("hand.yaml", "scripted.yaml")  # every good deck passes and every bad one fails with its codes
HARD = ("hard.yaml",)  # what rules cannot see: measured, not expected
PAGE = (960.0, 540.0)
IMAGE = "[image]"


@dataclass(frozen=True)
class LabelledDeck:
    id: str
    source: str
    lang: str
    request: str
    codes: frozenset[str]  # what a reader rejects it for; empty: a good deck
    slides: tuple[tuple[str, ...], ...]  # (heading, item, ...)


def load_set(files: tuple[str, ...] = CORE) -> list[LabelledDeck]:
    decks = []
    for name in files:
        for entry in yaml.safe_load((HERE / name).read_text(encoding="utf-8")):
            unknown = set(entry["codes"]) - set(CODES)
            if unknown:
                raise ValueError(f"{name}: deck {entry['id']}: unknown codes {sorted(unknown)}")
            slides = tuple(tuple(str(x) for x in slide) for slide in entry["slides"])
            decks.append(
                LabelledDeck(entry["id"], entry["source"], entry["lang"], entry["request"], frozenset(entry["codes"]), slides)
            )
    return decks


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (160, 90), (40, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def _font(text: str) -> str:
    return "helv" if all(ord(ch) < 0x100 for ch in text) else "china-s"  # the CJK font for anything past Latin-1


def build_pdf(deck: LabelledDeck, path: Path) -> Path:
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


def judge(deck: LabelledDeck, folder: Path) -> ContentReport:
    return check_deck(build_pdf(deck, folder / f"{deck.id}.pdf"), FiltersConfig(), deck.lang, deck.request)


def figures(results: list[tuple[LabelledDeck, ContentReport]]) -> dict[str, tuple[int, int, int]]:
    """code -> (true positives, false positives, false negatives) over the set."""
    found = {}
    for code in CODES:
        flagged = [(deck, code in report.failed) for deck, report in results]
        found[code] = (
            sum(hit and code in deck.codes for deck, hit in flagged),
            sum(hit and code not in deck.codes for deck, hit in flagged),
            sum(not hit and code in deck.codes for deck, hit in flagged),
        )
    return found


def table(results: list[tuple[LabelledDeck, ContentReport]]) -> str:
    good = sum(not deck.codes for deck, _ in results)
    lines = [
        f"{len(results)} decks ({good} good, {len(results) - good} bad)",
        "",
        "| check | labelled | flagged | precision | recall |",
        "|---|---:|---:|---:|---:|",
    ]
    for code, (tp, fp, fn) in figures(results).items():
        precision = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
        recall = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
        lines.append(f"| {code} | {tp + fn} | {tp + fp} | {precision} | {recall} |")
    return "\n".join(lines)


def main() -> int:
    import tempfile

    for title, files in (("core set", CORE), ("core and hard cases", CORE + HARD)):
        with tempfile.TemporaryDirectory() as folder:
            results = [(deck, judge(deck, Path(folder))) for deck in load_set(files)]
        print(f"## {title}: {table(results)}\n")
        for deck, report in results:
            if set(report.failed) != deck.codes:
                print(f"  {deck.id}: labelled {sorted(deck.codes)}, flagged {report.failed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
