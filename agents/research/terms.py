"""Search terms for SQLite FTS5: one tokenisation for indexed text and queries, English and CJK alike.

FTS5's `unicode61` tokenizer keeps a run of CJK characters as one token, so
"数值分析" would only match itself. Before indexing, each CJK run is therefore
rewritten as its bigrams followed by its single characters ("数值 值分 分析 数 值
分 析"), separated by spaces; Latin words pass through (FTS5's porter stemmer
folds their inflections). A query uses the same rewriting: a CJK run becomes a
phrase of its bigrams (an exact match ranks first) and each bigram on its own
(partial matches still count), so BM25 ranks passages by how much of the query
they contain.
"""

from __future__ import annotations

import re

from core.language import normalize_text

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_GAP = re.compile(rf"(?<=[{CJK}])\s+(?=[{CJK}])")
_TOKEN = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>(?:(?![{CJK}])[^\W_])+)")
STOPWORDS = frozenset(
    "a about all an and are as at be been but by can do does for from has have how i in into is it its "
    "my not of on or our so than that the their them then there these they this those to was we were what when "
    "where which who why will with would you your".split()
)


def clean(text: str) -> str:
    """NFKC text with collapsed whitespace and no spaces between CJK characters (PDF extraction adds them)."""
    return _CJK_GAP.sub("", normalize_text(text))


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(token, is_cjk) pairs of the cleaned, case-folded text."""
    return [(m.group(), m.lastgroup == "cjk") for m in _TOKEN.finditer(clean(text).casefold())]


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def index_terms(text: str) -> str:
    """The text as FTS5 sees it: Latin words as they are, CJK runs as bigrams then single characters."""
    out: list[str] = []
    for token, is_cjk in _tokens(text):
        if is_cjk:
            out.extend(_bigrams(token))
            if len(token) > 1:
                out.extend(token)
        else:
            out.append(token)
    return " ".join(out)


def query_words(query: str) -> list[str]:
    """What a snippet looks for: the query's words (less stopwords) and CJK runs with their bigrams, case-folded."""
    tokens = _tokens(query)
    words = [t for t, is_cjk in tokens if not is_cjk and t not in STOPWORDS] or [t for t, is_cjk in tokens if not is_cjk]
    runs = [t for t, is_cjk in tokens if is_cjk]
    return list(dict.fromkeys(words + runs + [gram for run in runs for gram in _bigrams(run)]))


def match_expression(query: str) -> str | None:
    """An FTS5 MATCH expression ranking exact phrases first, then partial matches; None for a query with no words."""
    tokens = _tokens(query)
    if not tokens:
        return None
    parts: list[str] = []
    words = [t for t, is_cjk in tokens if not is_cjk]
    if len(words) > 1 and len(words) == len(tokens):
        parts.append(" ".join(words))
    for token, is_cjk in tokens:
        if is_cjk:
            grams = _bigrams(token)
            if len(grams) > 1:
                parts.append(" ".join(grams))
            parts.extend(grams)
        elif token not in STOPWORDS or all(t in STOPWORDS for t in words):
            parts.append(token)
    return " OR ".join(f'"{p}"' for p in dict.fromkeys(parts))
