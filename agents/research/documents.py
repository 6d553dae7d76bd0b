"""Documents for the offline corpus: PDFs (PyMuPDF, NFKC text), Markdown/text/HTML files, Parquet rows.

A PDF also yields its paper metadata (title, authors, abstract, year), read from
its metadata and the layout of its first page: the title is the largest text
near the top, the authors are the name-like lines between it and the abstract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pyarrow.parquet as pq
import trafilatura
from markdownify import markdownify

from agents.research.index import corpus_url
from agents.research.terms import clean
from core.cli import InputError
from core.pdf import pymupdf
from core.seams.research import Paper

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIX = ".pdf"
PARQUET_SUFFIX = ".parquet"
DOCUMENT_SUFFIXES = (PDF_SUFFIX, *TEXT_SUFFIXES, *HTML_SUFFIXES, PARQUET_SUFFIX)

_HYPHEN_BREAK = re.compile(r"(?<=[a-z])-\n(?=[a-z])")
_DOT_LEADER = re.compile(r"(?:\s*\.){4,}")
_ABSTRACT = re.compile(r"^(abstract|摘要)\W*$", re.IGNORECASE)
_SECTION_ONE = re.compile(r"^(1\.?\s*)?(introduction|引言|绪论)\b", re.IGNORECASE)
_SECTION_NUMBER = re.compile(r"^\d+(\.\d+)*\s+")
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
_ARXIV_ID = re.compile(r"(\d{2})(\d{2})\.\d{4,5}")
_NAME_WORD = re.compile(r"^[A-ZÀ-ÖØ-ÞŁ][\w'’.\-]*$")
_AFFILIATION = re.compile(
    r"universit|institut|college|school|department|laborator|\blab\b|research|google|microsoft|openai|brain|"
    r"\binc\b|corporation|academy|center|centre|language|lecture|notes|review|conference|proceedings",
    re.IGNORECASE,
)
ABSTRACT_CHARS = 1500


class DocumentError(InputError, ValueError):
    """A file that cannot be read as a document; the message names it."""


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    source: str  # the file it came from, or its original URL
    pages: tuple[str, ...]
    paper: Optional[Paper] = None


# ---------------------------------------------------------------- PDF


def _block_text(raw: str) -> str:
    return clean(_DOT_LEADER.sub(" … ", _HYPHEN_BREAK.sub("", raw)))


def pdf_pages(doc: pymupdf.Document) -> tuple[str, ...]:
    """Each page's text blocks as cleaned paragraphs separated by blank lines."""
    pages = []
    for page in doc.pages():
        blocks = (_block_text(b[4]) for b in page.get_text("blocks") if b[6] == 0)
        pages.append("\n\n".join(b for b in blocks if b))
    return tuple(pages)


def _first_page_lines(page: pymupdf.Page) -> list[tuple[float, str]]:
    """(font size, text) of each line on the page, top to bottom as extracted."""
    lines = []
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            text = clean("".join(span["text"] for span in line["spans"]))
            if text:
                lines.append((round(max(span["size"] for span in line["spans"]), 1), text))
    return lines


def _names(line: str) -> list[str]:
    """The person names on an author line ("A and B", "A, B"), or none when it is not one."""
    if "@" in line or any(ch.isdigit() for ch in line) or _AFFILIATION.search(line):
        return []
    found = []
    for part in re.split(r",|\band\b|&", re.sub(r"[∗*†‡§¶]", "", line)):
        words = part.split()
        if 2 <= len(words) <= 4 and all(_NAME_WORD.match(w) for w in words):
            found.append(" ".join(words))
    return found


def _year(doc_id: str, head: str, metadata: dict) -> Optional[int]:
    if m := _ARXIV_ID.search(doc_id):
        return 2000 + int(m.group(1))
    if m := _YEAR.search(head):
        return int(m.group(1))
    if m := _YEAR.search(str(metadata.get("creationDate") or "")):
        return int(m.group(1))
    return None


def paper_metadata(doc: pymupdf.Document, doc_id: str, first_page: str) -> Paper:
    """Title, authors, abstract and year from the PDF's metadata and first page."""
    lines = _first_page_lines(doc[0]) if len(doc) else []
    head = lines[:15]
    title_size = max((size for size, _ in head), default=0.0)
    sizes = sorted(size for size, _ in lines)
    body_size = sizes[len(sizes) // 2] if sizes else 0.0
    title_at = [i for i, (size, _) in enumerate(head) if size == title_size]
    title = clean(str((doc.metadata or {}).get("title") or ""))
    if not title or title.endswith((".dvi", ".tex")):
        title = " ".join(head[i][1] for i in title_at) if title_at and title_size > body_size * 1.15 else doc_id
        title = _SECTION_NUMBER.sub("", title)
    after_title = title_at[-1] + 1 if title_at else 0
    abstract_at = next((i for i, (_, text) in enumerate(lines) if _ABSTRACT.match(text.replace(" ", ""))), None)
    author_lines = lines[after_title : abstract_at if abstract_at is not None else after_title + 8]
    authors = tuple(dict.fromkeys(name for _, text in author_lines for name in _names(text)))
    if abstract_at is not None:
        body = []
        for _, text in lines[abstract_at + 1 :]:
            if _SECTION_ONE.match(text):
                break
            body.append(text)
        abstract = clean(_HYPHEN_BREAK.sub("", "\n".join(body)))
    else:
        abstract = clean(first_page)
    year = _year(doc_id, " ".join(text for _, text in head), doc.metadata or {})
    return Paper(doc_id, title, authors, year, abstract[:ABSTRACT_CHARS], corpus_url(doc_id))


def read_pdf(path: Path) -> Document:
    try:
        with pymupdf.open(path) as doc:
            if doc.needs_pass:
                raise DocumentError(f"{path}: the PDF is encrypted")
            pages = pdf_pages(doc)
            paper = paper_metadata(doc, path.stem, pages[0] if pages else "")
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise DocumentError(f"{path}: not a readable PDF ({exc})") from exc
    return Document(path.stem, paper.title, path.name, pages, paper)


# ---------------------------------------------------------------- text, HTML, Parquet


def html_to_text(html: str) -> str:
    """The main text of an HTML page as Markdown (trafilatura; markdownify when it finds no main text)."""
    extracted = trafilatura.extract(html, output_format="markdown", include_links=True, include_tables=True)
    return extracted or markdownify(html, heading_style="ATX", strip=["script", "style"])


def _title_of(text: str, fallback: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return clean(line.lstrip("#").strip())[:200] or fallback
    return fallback


def _paragraphs(text: str) -> str:
    return "\n\n".join(p for p in (clean(p) for p in re.split(r"\n\s*\n", text)) if p)


def read_text_file(path: Path) -> Document:
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror})") from exc
    text = html_to_text(raw) if path.suffix.lower() in HTML_SUFFIXES else raw
    return Document(path.stem, _title_of(text, path.stem), path.name, (_paragraphs(text),))


def read_parquet(path: Path, batch_rows: int = 1024) -> Iterator[Document]:
    """One document per row: `text` is required; `title`, `url` and `id` are used when present."""
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise DocumentError(f"{path}: not a readable Parquet file ({exc})") from exc
    names = set(table.schema_arrow.names)
    if "text" not in names:
        raise DocumentError(f"{path}: no 'text' column (columns: {sorted(names)})")
    wanted = [c for c in ("id", "title", "url", "text") if c in names]
    row = 0
    for batch in table.iter_batches(batch_size=batch_rows, columns=wanted):
        for item in batch.to_pylist():
            text = str(item.get("text") or "")
            doc_id = str(item.get("id") or f"{path.stem}-{row}")
            row += 1
            yield Document(
                doc_id,
                clean(str(item.get("title") or "")) or _title_of(text, doc_id),
                str(item.get("url") or path.name),
                (_paragraphs(text),),
            )


# ---------------------------------------------------------------- collections


def read_file(path: Path) -> Iterator[Document]:
    suffix = path.suffix.lower()
    if suffix == PDF_SUFFIX:
        yield read_pdf(path)
    elif suffix == PARQUET_SUFFIX:
        yield from read_parquet(path)
    elif suffix in TEXT_SUFFIXES + HTML_SUFFIXES:
        yield read_text_file(path)
    else:
        raise DocumentError(f"{path}: unsupported file type (supported: {', '.join(DOCUMENT_SUFFIXES)})")


def document_files(source: Path) -> list[Path]:
    """The document files of a folder (recursively, sorted) or the file itself."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise DocumentError(f"{source}: no such file or folder")
    return sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)


def load_documents(source: Path) -> Iterator[Document]:
    for path in document_files(source):
        yield from read_file(path)
