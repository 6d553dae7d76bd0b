"""Task sources: PersonaHub personas, arXiv papers, FinePDFs-Edu documents.

Each source is loaded with `datasets` (streaming from the hub when `hub_id` is
set and no local `path`), or from local files: a JSONL of personas, a folder (or
parquet) of papers, a folder of PDFs. Every record keeps its provenance. A source
that cannot be used at all (missing path, empty, wrong columns) raises
SourceError naming it; one unreadable document is skipped and counted.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from core.language import detect_language, normalize_text
from core.pdf import pymupdf
from core.seams.drafts import SourceDoc
from pipeline.config import SourceConfig

log = logging.getLogger(__name__)

EXCERPT_CHARS = 3000
DOCUMENT_SOURCES = ("arxiv", "finepdfs")


class SourceError(ValueError):
    """A task source that cannot be used; the message names it."""


@dataclass
class LoadReport:
    loaded: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)  # "<source>/<reason>" -> count


def _doc_id(source: str, key: str) -> str:
    return f"{source}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def _provenance(name: str, cfg: SourceConfig, ident: str) -> dict[str, str]:
    prov = {"source": name, "source_id": ident}
    if cfg.licence:
        prov["licence"] = cfg.licence
    if cfg.hub_id and not cfg.path:
        prov["hub_id"] = cfg.hub_id
    return prov


def _rows(name: str, cfg: SourceConfig, required: str) -> Iterator[dict]:
    """Rows of a tabular source (JSONL/JSON/Parquet file or hub dataset), checked for `required`."""
    import datasets

    datasets.disable_progress_bars()
    if cfg.path:
        path = Path(cfg.path)
        kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}.get(path.suffix)
        if kind is None:
            raise SourceError(f"source {name}: {path} is not a .jsonl, .json or .parquet file")
        if path.stat().st_size == 0:
            raise SourceError(f"source {name}: {path} is empty")
        rows = datasets.load_dataset(kind, data_files=str(path), split="train")
    else:
        rows = datasets.load_dataset(cfg.hub_id, cfg.subset, split="train", streaming=True)
    columns = rows.column_names
    if columns is not None and required not in columns:
        raise SourceError(f"source {name}: no {required!r} column (found {sorted(columns)})")
    return iter(rows)


def _largest_text(page: pymupdf.Page) -> str:
    """The lines set in the largest font on a page: the title, on a first page."""
    lines = [
        [span for span in line["spans"] if span["text"].strip()]
        for block in page.get_text("dict")["blocks"]
        for line in block.get("lines", ())
        if abs(line["dir"][1]) < 1e-3  # horizontal lines only (arXiv stamps the margin vertically)
    ]
    lines = [spans for spans in lines if spans]
    if not lines:
        return ""
    biggest = max(round(s["size"], 1) for spans in lines for s in spans)
    title = ["".join(s["text"] for s in spans) for spans in lines if max(round(s["size"], 1) for s in spans) == biggest]
    return normalize_text(" ".join(title))[:200]


def _pdf_doc(name: str, cfg: SourceConfig, pdf: Path) -> SourceDoc:
    """Title, language and an excerpt of a PDF (metadata title, else the first page's largest text)."""
    with pymupdf.open(pdf) as doc:
        if doc.needs_pass:
            raise ValueError("encrypted")
        text = normalize_text(" ".join(page.get_text() for page in itertools.islice(doc, 3)))
        meta_title = (doc.metadata or {}).get("title", "").strip()
        if Path(meta_title).suffix in (".dvi", ".tex", ".doc", ".docx", ".pdf"):
            meta_title = ""  # a file name left by the typesetting tool, not a title
        title = meta_title or (_largest_text(doc[0]) if doc.page_count else "")
    if len(text) < 200:
        raise ValueError("no extractable text")
    return SourceDoc(
        source=name,
        doc_id=_doc_id(name, pdf.name),
        text=text[:EXCERPT_CHARS],
        title=title,
        language=detect_language(text).lang,
        path=str(pdf.resolve()),
        provenance=_provenance(name, cfg, pdf.name),
    )


def _pdf_folder(name: str, cfg: SourceConfig, folder: Path, report: LoadReport) -> Iterator[SourceDoc]:
    pdfs = sorted(folder.glob("*.pdf"))
    if not pdfs:
        raise SourceError(f"source {name}: no PDF files in {folder}")
    for pdf in pdfs:
        try:
            yield _pdf_doc(name, cfg, pdf)
        except (ValueError, RuntimeError, pymupdf.FileDataError) as exc:
            log.warning("source %s: skipping %s (%s)", name, pdf.name, exc)
            report.skipped[f"{name}/unreadable_pdf"] += 1


def _text_records(name: str, cfg: SourceConfig, report: LoadReport) -> Iterator[SourceDoc]:
    for i, row in enumerate(_rows(name, cfg, "text")):
        text = normalize_text(str(row.get("text") or ""))
        if len(text) < 200:
            report.skipped[f"{name}/too_short"] += 1
            continue
        ident = str(row.get("id") or row.get("url") or i)
        yield SourceDoc(
            source=name,
            doc_id=_doc_id(name, ident),
            text=text[:EXCERPT_CHARS],
            title=str(row.get("title") or text[:120]),
            language=detect_language(text).lang,
            provenance=_provenance(name, cfg, ident) | ({"url": str(row["url"])} if row.get("url") else {}),
        )


def _personas(name: str, cfg: SourceConfig, report: LoadReport) -> Iterator[SourceDoc]:
    for i, row in enumerate(_rows(name, cfg, "persona")):
        persona = " ".join(str(row.get("persona") or "").split())
        if len(persona) < 10:
            report.skipped[f"{name}/empty_persona"] += 1
            continue
        yield SourceDoc(source=name, doc_id=_doc_id(name, persona), text=persona, provenance=_provenance(name, cfg, str(i)))


def load_source(name: str, cfg: SourceConfig, report: LoadReport) -> Iterator[SourceDoc]:
    """Documents of one configured source, lazily (hub sources stream)."""
    if not cfg.path and not cfg.hub_id:
        raise SourceError(f"source {name}: set sources.{name}.path or sources.{name}.hub_id")
    if cfg.path and not Path(cfg.path).exists():
        raise SourceError(f"source {name}: {cfg.path} does not exist")
    if name == "persona":
        docs = _personas(name, cfg, report)
    elif cfg.path and Path(cfg.path).is_dir():
        docs = _pdf_folder(name, cfg, Path(cfg.path), report)
    else:
        docs = _text_records(name, cfg, report)
    for doc in docs:
        report.loaded[name] += 1
        yield doc
