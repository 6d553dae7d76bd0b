"""The offline corpus: a SQLite FTS5 index of document passages and paper metadata, ranked by BM25.

Passages (about `PASSAGE_CHARS` characters of whole paragraphs, never across a
page) are what a search ranks, so a snippet comes from the part of a document
that matches; a result lists each document once, at its best passage. The
document's title is indexed in its own column with a higher BM25 weight. Whole
texts are stored too, so `corpus://<id>` resolves offline. An index is built
into a temporary file and renamed into place, so readers never see half of one.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from agents.research.terms import clean, index_terms, match_expression, query_words
from core.cli import InputError
from core.seams.research import Author, Paper, Scholar, SearchHit, from_json, to_json

if TYPE_CHECKING:
    from agents.research.documents import Document

SCHEMA_VERSION = "1"
PASSAGE_CHARS = 900
SNIPPET_CHARS = 320
CANDIDATES_PER_RESULT = 20  # passages ranked per result wanted, before keeping one per document
TITLE_WEIGHT = 4.0
_TOKENIZER = "porter unicode61 remove_diacritics 2"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s*")

_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents(id TEXT PRIMARY KEY, title TEXT NOT NULL, source TEXT NOT NULL, page_count INTEGER NOT NULL, pages TEXT NOT NULL);
CREATE VIRTUAL TABLE passages USING fts5(title, body, doc_id UNINDEXED, page UNINDEXED, text UNINDEXED, tokenize='{_TOKENIZER}');
CREATE TABLE papers(id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE paper_authors(author_id TEXT NOT NULL, paper_id TEXT NOT NULL, name TEXT NOT NULL);
CREATE INDEX paper_authors_by_author ON paper_authors(author_id);
CREATE VIRTUAL TABLE paper_terms USING fts5(title, authors, abstract, paper_id UNINDEXED, tokenize='{_TOKENIZER}');
"""


class CorpusError(InputError, LookupError):
    """An index that is missing, of another version, or lacks what was asked for; the message names it."""


@dataclass(frozen=True)
class BuildStats:
    documents: int
    passages: int
    papers: int
    seconds: float


@dataclass(frozen=True)
class StoredDocument:
    id: str
    title: str
    source: str
    pages: tuple[str, ...]

    def markdown(self) -> str:
        """The whole text with page markers, as fetch_url shows it."""
        head = f"# {self.title}\n\nSource: {self.source}\n"
        if len(self.pages) == 1:
            return f"{head}\n{self.pages[0]}"
        return head + "".join(f"\n[page {n}]\n{text}\n" for n, text in enumerate(self.pages, 1))


def corpus_url(doc_id: str) -> str:
    return f"corpus://{doc_id}"


def author_id(name: str) -> str:
    """A stable id for an author name in the offline index: its words, lower-cased, joined by '-'."""
    return "-".join(re.findall(r"[^\W_]+", name.casefold()))


# ---------------------------------------------------------------- building


def split_passages(page: str, limit: int = PASSAGE_CHARS) -> Iterator[str]:
    """Whole paragraphs gathered up to `limit` characters; a longer paragraph is cut between sentences."""
    current = ""
    for paragraph in page.split("\n\n"):
        pieces = [paragraph] if len(paragraph) <= limit else [s for s in _SENTENCE_END.split(paragraph) if s]
        for piece in pieces:
            if current and len(current) + len(piece) + 1 > limit:
                yield current
                current = ""
            current = clean(f"{current} {piece}")  # no space between CJK characters
            while len(current) > 2 * limit:  # a "sentence" with no end in sight (a table, a formula dump)
                yield current[:limit]
                current = current[limit:]
    if current:
        yield current


def _insert(db: sqlite3.Connection, doc: Document) -> tuple[int, int]:
    pages = json.dumps(doc.pages, ensure_ascii=False)
    try:
        db.execute("INSERT INTO documents VALUES (?, ?, ?, ?, ?)", (doc.id, doc.title, doc.source, len(doc.pages), pages))
    except sqlite3.IntegrityError as exc:
        raise CorpusError(
            f"two documents have the id {doc.id!r} (the second from {doc.source}); ids are file names without suffix"
        ) from exc
    title_terms = index_terms(doc.title)
    rows = [
        (title_terms, index_terms(passage), doc.id, page_no, passage)
        for page_no, page in enumerate(doc.pages, 1)
        for passage in split_passages(page)
    ]
    db.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?)", rows)
    if doc.paper is None:
        return len(rows), 0
    paper = doc.paper
    db.execute("INSERT INTO papers VALUES (?, ?)", (paper.id, json.dumps(to_json(paper), ensure_ascii=False)))
    db.executemany("INSERT INTO paper_authors VALUES (?, ?, ?)", [(author_id(a), paper.id, a) for a in paper.authors])
    db.execute(
        "INSERT INTO paper_terms VALUES (?, ?, ?, ?)",
        (index_terms(paper.title), index_terms(" ".join(paper.authors)), index_terms(paper.abstract), paper.id),
    )
    return len(rows), 1


def build_index(documents: Iterable[Document], path: Path) -> BuildStats:
    """Index `documents` into a new SQLite file at `path` (replacing any old one once complete)."""
    started = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    counts = [0, 0, 0]
    try:
        db = sqlite3.connect(tmp)
        try:
            db.executescript(_SCHEMA)
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            for doc in documents:
                passages, papers = _insert(db, doc)
                counts[0] += 1
                counts[1] += passages
                counts[2] += papers
            db.execute("INSERT INTO passages(passages) VALUES ('optimize')")
            db.execute("INSERT INTO paper_terms(paper_terms) VALUES ('optimize')")
            db.commit()
        finally:
            db.close()
        os.chmod(tmp, 0o644)  # mkstemp makes it private; an index is shared by workers and users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return BuildStats(counts[0], counts[1], counts[2], time.perf_counter() - started)


# ---------------------------------------------------------------- querying


def snippet(text: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """The `width`-character window of `text` holding the most distinct query words, cut at spaces."""
    folded = text.casefold()
    hits = sorted((m.start(), w) for w in set(words) for m in re.finditer(re.escape(w), folded))
    if len(text) <= width or not hits:
        start = 0
    else:
        best = max(hits, key=lambda h: len({w for pos, w in hits if h[0] <= pos < h[0] + width}))
        start = max(0, min(best[0] - width // 5, len(text) - width))
        if start and (space := text.find(" ", start, start + 20)) != -1:
            start = space + 1
    end = start + width
    if end < len(text) and (space := text.rfind(" ", end - 30, end)) != -1:
        end = space
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


class CorpusIndex:
    """Read access to a built index; one short-lived connection per call, so any thread may use it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise CorpusError(f"{self.path}: no corpus index (build one with `python -m agents.corpus build SOURCE {self.path}`)")
        rows = self._query("SELECT value FROM meta WHERE key = 'schema_version'", ())
        if not rows or rows[0][0] != SCHEMA_VERSION:
            raise CorpusError(
                f"{self.path}: index schema {rows and rows[0][0]!r}, this code reads {SCHEMA_VERSION!r}; rebuild it"
            )

    def _connect(self) -> sqlite3.Connection:
        try:
            return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise CorpusError(f"{self.path}: cannot open the corpus index ({exc})") from exc

    def _query(self, sql: str, args: tuple) -> list[tuple]:
        db = self._connect()
        try:
            return db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise CorpusError(f"{self.path}: query failed ({exc})") from exc
        finally:
            db.close()

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """The `limit` best-matching documents, each at its passage that best matches in the body."""
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self._query(
            "SELECT p.doc_id, p.page, p.text, d.title, d.source, d.page_count, bm25(passages, 0.0, 1.0) "
            "FROM passages p JOIN documents d ON d.id = p.doc_id "
            f"WHERE passages MATCH ? ORDER BY bm25(passages, {TITLE_WEIGHT}, 1.0) LIMIT ?",
            (expression, limit * CANDIDATES_PER_RESULT),
        )
        best: dict[str, tuple] = {}  # documents in rank order, each with its best body passage
        for row in rows:
            if row[0] not in best or row[6] < best[row[0]][6]:
                best[row[0]] = row
        words = query_words(query)
        return [
            SearchHit(
                title,
                corpus_url(doc_id),
                snippet(text, words),
                location=f"page {page}" if page_count > 1 else None,
                source=source if source.startswith(("http://", "https://")) else None,
            )
            for doc_id, page, text, title, source, page_count, _ in list(best.values())[:limit]
        ]

    def document(self, doc_id: str) -> StoredDocument:
        rows = self._query("SELECT id, title, source, pages FROM documents WHERE id = ?", (doc_id,))
        if not rows:
            raise CorpusError(f"corpus://{doc_id}: no such document in {self.path}")
        doc_id, title, source, pages = rows[0]
        return StoredDocument(doc_id, title, source, tuple(json.loads(pages)))

    def search_papers(self, query: str, limit: int = 5) -> list[Paper]:
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self._query(
            "SELECT p.record FROM paper_terms t JOIN papers p ON p.id = t.paper_id WHERE paper_terms MATCH ? "
            f"ORDER BY bm25(paper_terms, {TITLE_WEIGHT}, 2.0, 1.0) LIMIT ?",
            (expression, limit),
        )
        return [_paper(record) for (record,) in rows]

    def paper(self, paper_id: str) -> Paper:
        """A paper by its id, or by a suffix of it (an arXiv id such as 1706.03762)."""
        rows = self._query(
            "SELECT record FROM papers WHERE id = ? OR id LIKE ? ORDER BY id = ? DESC LIMIT 1",
            (paper_id, f"%{paper_id}", paper_id),
        )
        if not rows:
            raise CorpusError(f"paper {paper_id!r}: not in the offline index {self.path}")
        return _paper(rows[0][0])

    def authors(self, paper_id: str) -> list[Author]:
        return [Author(author_id(name), name) for name in self.paper(paper_id).authors]

    def scholar(self, author: str) -> Scholar:
        key = author_id(author)
        rows = self._query(
            "SELECT a.name, p.record FROM paper_authors a JOIN papers p ON p.id = a.paper_id WHERE a.author_id = ? ORDER BY a.paper_id",
            (key,),
        )
        if not rows:
            raise CorpusError(f"author {author!r}: no paper by this author in the offline index {self.path}")
        papers = [_paper(record) for _, record in rows]
        listed = tuple((p.title, p.year) for p in sorted(papers, key=lambda p: -(p.year or 0)))
        return Scholar(key, rows[0][0], (), len(papers), None, None, listed)


def _paper(record: str) -> Paper:
    return from_json(Paper, json.loads(record))
