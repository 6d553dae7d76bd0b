"""How faithfully a PPTX reproduces its deck's PDF: LibreOffice renders the PPTX, and the two
PDFs are compared slide by slide.

Words are tokens of letters or digits between spaces (a Chinese, Japanese or Korean character
is a token of its own; punctuation at a token's ends, bullets and emoji are not words), placed
at their first character's origin. Each PDF word is matched to the nearest equal word of the PPTX render on the same
slide; the share matched is `words_kept`, the distances of the matches (CSS px of a slide
1280 px wide) give the median and max displacement. A text block (a block of the PDF's text
layer) changed its line count when its matched words sit on a different number of lines.
`ssim` compares the two renders in grey at 1280 px wide; `images` counts the pictures of each
render, and `objects` what the PPTX holds (text frames, pictures, native tables, shapes).

LibreOffice renders in the locale `LOCALE`, its own default, under which it adds space between
Asian and other text as it does for most of its users (not under a Japanese or Korean locale);
another can be named (`locale`).
"""

from __future__ import annotations

import functools
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zipfile import BadZipFile

import numpy as np
from lxml.etree import XMLSyntaxError
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.exc import PackageNotFoundError

from core.cli import Failed, InputError
from core.pdf import pymupdf

WIDTH = 1280  # displacements and SSIM at this slide width, whatever the aspect
TARGETS = {"words_kept": 0.95, "median_px": 4.0, "line_count_changed": 0}
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")  # CJK, kana, fullwidth forms
LOCALE = "en-US"  # LibreOffice's default locale (a profile without one takes it from LANG: en-US for C.UTF-8)
_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooSetupSystemLocale" oor:op="fuse"><value>{locale}</value></prop></item>
</oor:items>
"""


class CheckError(Failed, RuntimeError):
    """The check could not run (LibreOffice missing or failing, or a bad input)."""


class BadInput(InputError, CheckError):
    """A missing or unreadable PPTX or PDF, or a locale that is none."""


@dataclass(frozen=True)
class Word:
    text: str
    x: float
    y: float  # baseline, px at WIDTH
    size: float
    block: int  # the text block of its page


@functools.cache
def libreoffice_version(soffice: str) -> str:
    found = shutil.which(soffice)
    if found is None:
        raise CheckError(f"LibreOffice ({soffice}) is not installed: Debian libreoffice-impress")
    out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    return out.split(" (")[0].rsplit(" ", 1)[0] if out else "LibreOffice"


def locale_tag(text: str) -> str:
    """`text` if it is a locale such as en-US or ja-JP (BCP 47 language and subtags), else ValueError."""
    if not re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*", text):
        raise ValueError(f"{text!r} is not a locale such as en-US or ja-JP")
    return text


def render_pptx(pptx: Path, out_dir: Path, soffice: str = "soffice", timeout_s: float = 120.0, locale: str = LOCALE) -> Path:
    """The PPTX as PDF, rendered by LibreOffice headless with a profile of its own (so conversions
    may run side by side) whose locale is `locale` (BCP 47)."""
    found = shutil.which(soffice)
    if found is None:
        raise CheckError(f"LibreOffice ({soffice}) is not installed: Debian libreoffice-impress")
    try:
        settings = _PROFILE.format(locale=locale_tag(locale))
    except ValueError as exc:
        raise BadInput(str(exc)) from exc
    with tempfile.TemporaryDirectory(prefix="lo-profile-") as profile:
        (Path(profile) / "user").mkdir()
        (Path(profile) / "user" / "registrymodifications.xcu").write_text(settings, encoding="utf-8")
        command = [
            found,
            f"-env:UserInstallation={Path(profile).as_uri()}",
            "--headless",
            "--norestore",
            "--nologo",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out_dir),
            str(pptx),
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise CheckError(f"LibreOffice did not convert {pptx} within {timeout_s:.0f} s") from exc
    pdf = out_dir / f"{pptx.stem}.pdf"
    if done.returncode != 0 or not pdf.is_file():
        raise CheckError(
            f"LibreOffice could not convert {pptx} (exit {done.returncode}): {(done.stderr or done.stdout).strip()[:300]}"
        )
    return pdf


def check(pptx: Path, pdf: Path, soffice: str = "soffice", timeout_s: float = 120.0, locale: str = LOCALE) -> dict[str, Any]:
    """The fidelity figures of `pptx` against `pdf` (see the module docstring)."""
    for path, suffix in ((pptx, ".pptx"), (pdf, ".pdf")):
        if not path.is_file():
            raise BadInput(f"{path}: no such file")
        if path.suffix.lower() != suffix:
            raise BadInput(f"{path}: expected a {suffix} file")
    started = time.perf_counter()
    try:
        objects = _objects(pptx)
    except (PackageNotFoundError, BadZipFile, KeyError, ValueError, XMLSyntaxError) as exc:
        raise BadInput(f"{pptx}: not a readable PPTX ({exc})") from exc
    try:
        reference = pymupdf.open(pdf)
    except pymupdf.FileDataError as exc:
        raise BadInput(f"{pdf}: not a readable PDF ({exc})") from exc
    with reference, tempfile.TemporaryDirectory(prefix="pptx-check-") as tmp:
        if not reference.is_pdf:
            raise BadInput(f"{pdf}: not a PDF")
        with pymupdf.open(render_pptx(pptx, Path(tmp), soffice, timeout_s, locale)) as candidate:
            if reference.page_count != candidate.page_count:
                raise CheckError(f"{pdf} has {reference.page_count} pages, the PPTX {candidate.page_count} slides")
            slides = [_compare(i + 1, reference[i], candidate[i], objects[i]) for i in range(reference.page_count)]
    deck = _deck(slides)
    for slide in slides:
        del slide["_distances"]
    return {
        "pptx": str(pptx),
        "pdf": str(pdf),
        "renderer": libreoffice_version(soffice),
        "locale": locale,
        "seconds": round(time.perf_counter() - started, 2),
        "deck": deck,
        "slides": slides,
    }


def _compare(number: int, reference: pymupdf.Page, candidate: pymupdf.Page, objects: dict[str, int]) -> dict[str, Any]:
    want, got = words(reference), words(candidate)
    pairs = _match(want, got)
    distances = [float(np.hypot(want[i].x - got[j].x, want[i].y - got[j].y)) for i, j in pairs]
    changed = _changed_blocks(want, got, pairs)
    return {
        "slide": number,
        "words": len(want),
        "words_kept": round(len(pairs) / len(want), 4) if want else 1.0,
        "displacement_px": _spread(distances),
        "blocks": len({w.block for w in want}),
        "line_count_changed": len(changed),
        "changed_blocks": changed,
        "ssim": round(ssim(_grey(reference), _grey(candidate)), 4),
        "images": {"pdf": len(reference.get_image_info()), "pptx": len(candidate.get_image_info())},
        "objects": objects,
        "_distances": distances,
    }


def _deck(slides: list[dict[str, Any]]) -> dict[str, Any]:
    distances = [d for s in slides for d in s["_distances"]]
    total = sum(s["words"] for s in slides)
    kept = sum(round(s["words_kept"] * s["words"]) for s in slides)
    deck = {
        "slides": len(slides),
        "words": total,
        "words_kept": round(kept / total, 4) if total else 1.0,
        "displacement_px": _spread(distances),
        "line_count_changed": sum(s["line_count_changed"] for s in slides),
        "ssim": round(statistics.mean(s["ssim"] for s in slides), 4) if slides else 1.0,
        "tables": sum(s["objects"]["tables"] for s in slides),
        "pictures": sum(s["objects"]["pictures"] for s in slides),
    }
    deck["within_targets"] = (
        deck["words_kept"] >= TARGETS["words_kept"]
        and deck["displacement_px"]["median"] <= TARGETS["median_px"]
        and deck["line_count_changed"] <= TARGETS["line_count_changed"]
    )
    return deck


def _spread(distances: list[float]) -> dict[str, float]:
    if not distances:
        return {"median": 0.0, "max": 0.0}
    return {"median": round(statistics.median(distances), 2), "max": round(max(distances), 2)}


def words(page: pymupdf.Page) -> list[Word]:
    """The page's words (see the module docstring), in px of a page WIDTH wide; `block` numbers the
    page's text blocks: PyMuPDF's blocks, joined when one continues the column of the other."""
    scale = WIDTH / page.rect.width
    found: list[Word] = []
    for block_no, block in enumerate(page.get_text("rawdict")["blocks"]):
        for line in block.get("lines", []):
            chars = [(char, span["size"]) for span in line["spans"] for char in span["chars"]]
            current: list[tuple[dict[str, Any], float]] = []
            for char, size in [*chars, (None, 0.0)]:
                c = char["c"] if char else " "
                split = not c.strip() or _CJK.match(c) or (current and _CJK.match(current[-1][0]["c"]))
                if split and current:
                    text = _trim(unicodedata.normalize("NFKC", "".join(ch["c"] for ch, _ in current)))
                    if text:
                        first = next(
                            (ch for ch, _ in current if unicodedata.category(ch["c"][:1] or " ")[0] in "LN"), current[0][0]
                        )
                        x, y = first["origin"]
                        found.append(Word(text, x * scale, y * scale, current[0][1] * scale, block_no))
                    current = []
                if char and c.strip():
                    current.append((char, size))
    return _join_columns(found)


def _trim(token: str) -> str:
    """The token without punctuation or symbols at its ends; "" when it has no letter or digit."""
    kept = [i for i, ch in enumerate(token) if unicodedata.category(ch)[0] in "LN"]
    return token[kept[0] : kept[-1] + 1] if kept else ""


def _join_columns(found: list[Word]) -> list[Word]:
    """Words with the blocks that continue one another (the next block's first line within 1.8 sizes
    below the last line of the other, overlapping it across) numbered as one."""
    spans: dict[int, tuple[float, float, float, float, float]] = {}  # block -> top y, bottom y, x0, x1, size
    for w in found:
        top, bottom, x0, x1, size = spans.get(w.block, (w.y, w.y, w.x, w.x, w.size))
        spans[w.block] = (min(top, w.y), max(bottom, w.y), min(x0, w.x), max(x1, w.x + w.size), max(size, w.size))
    parent = {b: b for b in spans}

    def root(b: int) -> int:
        while parent[b] != b:
            b = parent[b]
        return b

    for a, (_, bottom_a, x0a, x1a, size_a) in spans.items():
        for b, (top_b, _, x0b, x1b, size_b) in spans.items():
            if a != b and 0 < top_b - bottom_a <= 1.8 * max(size_a, size_b) and x0a < x1b and x0b < x1a:
                parent[root(b)] = root(a)
    return [Word(w.text, w.x, w.y, w.size, root(w.block)) for w in found]


def _match(want: list[Word], got: list[Word]) -> list[tuple[int, int]]:
    """Pairs (i, j) of equal words, nearest first; each word matched at most once."""
    by_text: dict[str, list[int]] = defaultdict(list)
    for j, w in enumerate(got):
        by_text[w.text].append(j)
    candidates = sorted(
        (float(np.hypot(w.x - got[j].x, w.y - got[j].y)), i, j) for i, w in enumerate(want) for j in by_text.get(w.text, ())
    )
    used_i: set[int] = set()
    used_j: set[int] = set()
    pairs = []
    for _, i, j in candidates:
        if i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
            pairs.append((i, j))
    return pairs


def _lines(ys: list[tuple[float, float]]) -> int:
    """Distinct baselines among (y, size) pairs: a new line starts half a size below the last."""
    count, last = 0, None
    for y, size in sorted(ys):
        if last is None or y - last > 0.5 * size:
            count += 1
            last = y
    return count


def _changed_blocks(want: list[Word], got: list[Word], pairs: list[tuple[int, int]]) -> list[dict[str, Any]]:
    matched = dict(pairs)
    changed = []
    for block in sorted({w.block for w in want}):
        members = [i for i, w in enumerate(want) if w.block == block and i in matched]
        if not members:
            continue
        before = _lines([(want[i].y, want[i].size) for i in members])
        after = _lines([(got[matched[i]].y, got[matched[i]].size) for i in members])
        if before != after:
            text = " ".join(want[i].text for i in members[:8])
            changed.append({"text": text, "lines": [before, after]})
    return changed


def _grey(page: pymupdf.Page) -> np.ndarray:
    pixmap = page.get_pixmap(
        matrix=pymupdf.Matrix(WIDTH / page.rect.width, WIDTH / page.rect.width), colorspace=pymupdf.csGRAY, alpha=False
    )
    return np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.height, pixmap.width).astype(np.float64)


def ssim(a: np.ndarray, b: np.ndarray, window: int = 7) -> float:
    """Mean structural similarity of two grey images (uniform 7x7 windows, the usual constants)."""
    h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    a, b = a[:h, :w], b[:h, :w]
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2

    def mean(x: np.ndarray) -> np.ndarray:
        s = np.pad(x, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
        return (s[window:, window:] - s[:-window, window:] - s[window:, :-window] + s[:-window, :-window]) / window**2

    ma, mb = mean(a), mean(b)
    va, vb, cov = mean(a * a) - ma**2, mean(b * b) - mb**2, mean(a * b) - ma * mb
    n = window**2 / (window**2 - 1)  # sample (co)variances, as scikit-image computes them
    score = ((2 * ma * mb + c1) * (2 * cov * n + c2)) / ((ma**2 + mb**2 + c1) * ((va + vb) * n + c2))
    return float(score.mean())


def _objects(pptx: Path) -> list[dict[str, int]]:
    """Per slide: text frames with text, pictures, native tables and other shapes."""
    counts = []
    for slide in Presentation(str(pptx)).slides:
        count = {"text": 0, "pictures": 0, "tables": 0, "shapes": 0}
        for shape in slide.shapes:
            if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
                count["pictures"] += 1
            elif getattr(shape, "has_table", False) and shape.has_table:
                count["tables"] += 1
            elif shape.has_text_frame and shape.text_frame.text.strip():
                count["text"] += 1
            else:
                count["shapes"] += 1
        counts.append(count)
    return counts
