"""The offline image library: figures extracted from local PDFs, each with the caption printed near it.

`build_library(source, folder)` writes `folder/<id>.png` files and
`folder/library.json` (id, file, size, caption, document title, where it came
from); `ImageLibrary(folder).search(query)` ranks images by BM25 over captions
and titles, with the same English/CJK terms as the corpus. Built images are
never committed: `scripts/build_image_library.py` or the research runtime
builds the library into a cache folder when it is first needed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from agents.research.documents import PDF_SUFFIX, document_files, read_pdf
from agents.research.index import corpus_url
from agents.research.terms import clean, index_terms, match_expression
from core.pdf import pymupdf
from core.seams.research import ImageHit

LIBRARY_FILE = "library.json"
MIN_PIXELS = 150 * 150
MIN_SHOWN_PT = (72.0, 48.0)  # width, height on the page: smaller images are icons or bullets
PER_DOCUMENT = 6
CAPTION_CHARS = 300
CAPTION_REACH_PT = 250.0  # how far below (or above) an image a "Figure ..." line may be (subfigures share one)
UNLABELLED_REACH_PT = 24.0  # how close below an image an unlabelled line must be to serve as its caption
_CAPTION_START = re.compile(r"^(figure|fig\.|table|图|表)\s*\d*", re.IGNORECASE)


class LibraryError(LookupError):
    """A library folder that is missing or unreadable, or an image not in it."""


@dataclass(frozen=True)
class LibraryImage:
    id: str
    file: str
    width: int
    height: int
    caption: str
    title: str  # the document's title
    source: str  # corpus://<document id> and page


def _caption(page: pymupdf.Page, bbox: pymupdf.Rect, fallback: str) -> str:
    """The "Figure N: ..." block nearest below (else above) the image, else the nearest block just below it."""
    blocks = [(pymupdf.Rect(b[:4]), clean(b[4])) for b in page.get_text("blocks") if b[6] == 0 and clean(b[4])]
    beside = [(r, t) for r, t in blocks if r.x0 < bbox.x1 and r.x1 > bbox.x0]
    below = sorted((r.y0 - bbox.y1, t) for r, t in beside if -2 <= r.y0 - bbox.y1 <= CAPTION_REACH_PT)
    above = sorted((bbox.y0 - r.y1, t) for r, t in beside if -2 <= bbox.y0 - r.y1 <= CAPTION_REACH_PT)
    labelled = [t for _, t in below + above if _CAPTION_START.match(t)]
    near = [t for gap, t in below if gap <= UNLABELLED_REACH_PT]
    text = (labelled or near or [fallback])[0]
    return text if len(text) <= CAPTION_CHARS else text[:CAPTION_CHARS].rsplit(" ", 1)[0] + "…"


def _png(doc: pymupdf.Document, xref: int) -> bytes:
    pix = pymupdf.Pixmap(doc, xref)
    smask = doc.extract_image(xref).get("smask") or 0
    if smask:
        pix = pymupdf.Pixmap(pix, pymupdf.Pixmap(doc, smask))
    if pix.colorspace is not None and pix.colorspace.n > 3:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    return pix.tobytes("png")


def _extract(path: Path, folder: Path, title: str) -> list[LibraryImage]:
    with pymupdf.open(path) as doc:
        candidates: dict[int, tuple[int, pymupdf.Rect, int, int]] = {}  # xref -> (page number, bbox, width, height)
        for page in doc.pages():
            for info in page.get_image_info(xrefs=True):
                xref, width, height, bbox = info["xref"], info["width"], info["height"], pymupdf.Rect(info["bbox"])
                big_enough = width * height >= MIN_PIXELS and bbox.width >= MIN_SHOWN_PT[0] and bbox.height >= MIN_SHOWN_PT[1]
                if xref > 0 and big_enough and xref not in candidates:
                    candidates[xref] = (page.number, bbox, width, height)
        largest = sorted(candidates.items(), key=lambda c: (-c[1][2] * c[1][3], c[1][0], c[0]))[:PER_DOCUMENT]
        images: list[LibraryImage] = []
        for xref, (page_no, bbox, width, height) in sorted(largest, key=lambda c: (c[1][0], c[1][1].y0, c[1][1].x0)):
            image_id = f"{path.stem}-p{page_no + 1}-{len(images) + 1}"
            (folder / f"{image_id}.png").write_bytes(_png(doc, xref))
            caption = _caption(doc[page_no], bbox, f"Image on page {page_no + 1} of {title}")
            images.append(
                LibraryImage(
                    image_id, f"{image_id}.png", width, height, caption, title, f"{corpus_url(path.stem)} page {page_no + 1}"
                )
            )
    return images


def build_library(source: Path, folder: Path) -> list[LibraryImage]:
    """Extract the figures of every PDF under `source` into `folder` (replaced once complete)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        images: list[LibraryImage] = []
        for path in document_files(source):
            if path.suffix.lower() == PDF_SUFFIX:
                images += _extract(path, staging, read_pdf(path).title)
        (staging / LIBRARY_FILE).write_text(
            json.dumps([asdict(i) for i in images], ensure_ascii=False, indent=1), encoding="utf-8"
        )
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return images


class ImageLibrary:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        try:
            entries = json.loads((self.folder / LIBRARY_FILE).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise LibraryError(
                f"{self.folder}: not an image library (build one with scripts/build_image_library.py): {exc}"
            ) from exc
        self.images = [LibraryImage(**e) for e in entries]
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE captions USING fts5(caption, title, tokenize='porter unicode61 remove_diacritics 2')"
        )
        self._db.executemany(
            "INSERT INTO captions(rowid, caption, title) VALUES (?, ?, ?)",
            [(n, index_terms(i.caption), index_terms(i.title)) for n, i in enumerate(self.images)],
        )

    def search(self, query: str, limit: int) -> list[ImageHit]:
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self._db.execute(
            "SELECT rowid FROM captions WHERE captions MATCH ? ORDER BY bm25(captions, 2.0, 1.0) LIMIT ?", (expression, limit)
        )
        found = [self.images[rowid] for (rowid,) in rows.fetchall()]
        return [ImageHit(i.title, i.file, i.width, i.height, i.caption, source=i.source) for i in found]

    def read(self, file: str) -> bytes:
        """The bytes of a library image, by its file name."""
        path = self.folder / Path(file).name
        try:
            return path.read_bytes()
        except OSError as exc:
            raise LibraryError(f"image library {self.folder}: cannot read {file} ({exc.strerror}); rebuild the library") from exc
