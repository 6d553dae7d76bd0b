"""The offline corpus: CJK-aware terms, passages and snippets, every input kind, and the `python -m agents.corpus` CLI."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agents.research.documents import DocumentError, load_documents
from agents.research.index import CorpusError, CorpusIndex, build_index, snippet, split_passages
from agents.research.terms import index_terms, match_expression
from core.config import PROJECT_ROOT


def test_cjk_runs_become_bigrams_and_characters() -> None:
    assert index_terms("数值 分析 of Errors") == "数值 值分 分析 数 值 分 析 of errors"
    assert index_terms("ｅｒｒｏｒ⼀") == "error 一"  # NFKC folds full-width letters and Kangxi radicals
    assert match_expression("数值分析") == '"数值 值分 分析" OR "数值" OR "值分" OR "分析"'
    assert match_expression("attention is all you need") == '"attention is all you need" OR "attention" OR "need"'
    assert match_expression("the") == '"the"' and match_expression("?!") is None


def test_passages_keep_paragraphs_whole_up_to_the_limit() -> None:
    page = "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(10))
    passages = list(split_passages(page, limit=400))
    assert all(len(p) <= 400 for p in passages) and len(passages) == 5
    assert all(p.startswith("Paragraph") for p in passages)
    assert len(list(split_passages("x" * 5000, limit=400))) > 5  # text with no sentence end is still cut


def test_snippet_centres_on_the_query_words() -> None:
    text = "filler " * 100 + "the truncation error of Euler's method " + "filler " * 100
    cut = snippet(text, ["truncation", "euler"], width=120)
    assert "truncation error of Euler" in cut and cut.startswith("…") and cut.endswith("…") and len(cut) <= 122


def test_every_input_kind_is_indexed(tmp_path: Path, shared_data: Path) -> None:
    source = tmp_path / "docs"
    (source / "web").mkdir(parents=True)
    shutil.copy(shared_data / "edu_zh_thu-numerical-analysis-notes.pdf", source)
    (source / "guide.md").write_text("# Field guide\n\nThe heron waits in shallow water.\n", encoding="utf-8")
    (source / "web" / "page.html").write_text(
        "<html><head><title>Glaciers</title></head><body><article><h1>Glaciers</h1><p>Glaciers carve valleys slowly over "
        "thousands of years, leaving moraines and polished rock behind them as they retreat.</p></article></body></html>"
    )
    pq.write_table(
        pa.table(
            {
                "text": ["光合作用是植物利用光能的过程。", "Volcanoes erupt magma."],
                "title": ["光合作用", None],
                "url": ["https://example.org/photo", None],
            }
        ),
        source / "rows.parquet",
    )
    stats = build_index(load_documents(source), tmp_path / "x.db")
    assert (stats.documents, stats.papers) == (5, 1)
    index = CorpusIndex(tmp_path / "x.db")
    assert index.search("heron", 1)[0].url == "corpus://guide"
    assert index.search("moraines", 1)[0].title == "Glaciers"
    photo = index.search("光合作用", 1)[0]
    assert (photo.url, photo.source, photo.location) == ("corpus://rows-0", "https://example.org/photo", None)
    assert index.search("magma", 1)[0].title == "Volcanoes erupt magma."
    assert index.search("误差", 1)[0].location.startswith("page ")
    assert index.document("guide").markdown().startswith("# Field guide\n\nSource: guide.md\n")


def test_bad_inputs_and_indexes_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="no such file"):
        list(load_documents(tmp_path / "nothing"))
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 broken")
    with pytest.raises(DocumentError, match="bad.pdf"):
        list(load_documents(tmp_path / "bad.pdf"))
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "wrong.parquet")
    with pytest.raises(DocumentError, match="no 'text' column"):
        list(load_documents(tmp_path / "wrong.parquet"))
    with pytest.raises(CorpusError, match="python -m agents.corpus build"):
        CorpusIndex(tmp_path / "missing.db")
    sqlite3.connect(tmp_path / "old.db").executescript(
        "CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES ('schema_version', '0');"
    )
    with pytest.raises(CorpusError, match="rebuild it"):
        CorpusIndex(tmp_path / "old.db")
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(CorpusError, match="query failed"):
        CorpusIndex(tmp_path / "empty.db")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agents.corpus", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120
    )


def test_cli_builds_and_searches(tmp_path: Path, shared_data: Path, corpus_path: Path) -> None:
    source = tmp_path / "two"
    source.mkdir()
    for name in ("arxiv_1512.03385.pdf", "edu_zh_thu-compiler-principles-notes.pdf"):
        shutil.copy(shared_data / name, source)
    built = _cli("build", str(source), str(tmp_path / "two.db"))
    assert built.returncode == 0 and built.stdout.startswith("indexed 2 documents"), built.stderr
    found = _cli("search", str(corpus_path), "attention is all you need")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[2].strip().startswith("corpus://arxiv_1706.03762")
    zh = _cli("search", str(corpus_path), "数值分析", "-n", "2")
    assert "corpus://edu_zh_thu-numerical-analysis-notes" in zh.stdout.splitlines()[2]
    missing = _cli("search", str(tmp_path / "none.db"), "x")
    assert missing.returncode == 2 and "no corpus index" in missing.stderr  # bad input (core.cli)
