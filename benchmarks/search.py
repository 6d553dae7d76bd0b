"""Offline search latency: build an index of every ../shared/data document, then time ~200 varied queries.

    python -m benchmarks.search [--source ../shared/data] [--queries 200] [--repeat 3]

Queries are half English, half Chinese: hand-written ones plus phrases drawn
(seeded) from the indexed passages, 1-4 words or 2-6 characters long. Each
query is timed end to end through `CorpusIndex.search` (connection, BM25
ranking, best passage per document, snippet); figures are per call.
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from agents.research.documents import load_documents
from agents.research.index import CorpusIndex, build_index
from core.config import PROJECT_ROOT

ENGLISH = [
    "attention is all you need",
    "transformer encoder decoder",
    "residual learning",
    "BERT pre-training",
    "masked language model",
    "reinforcement learning from human feedback",
    "neural machine translation alignment",
    "probability density function",
    "random variables expectation",
    "linear regression gradient descent",
    "recursion tower of hanoi",
    "merge sort recurrence",
    "batch normalization",
    "ImageNet classification error",
    "self-attention complexity",
    "instruction following",
    "conditional probability Bayes rule",
    "logistic regression",
    "divide and conquer",
    "positional encoding sine",
]
CHINESE = [
    "数值分析",
    "误差分析",
    "绝对误差",
    "插值法",
    "牛顿迭代法",
    "线性方程组",
    "傅里叶变换",
    "频谱",
    "编译原理",
    "语法分析",
    "词法分析",
    "符号表",
    "代码优化",
    "基本块",
    "常微分方程",
    "矩阵特征值",
    "最小二乘",
    "周期信号",
    "系统函数",
    "收敛性",
]
_WORD = re.compile(r"[A-Za-z]{3,}")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


def sampled_queries(index_path: Path, count: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """(English, Chinese) phrases drawn from the index's passages."""
    rng = random.Random(seed)
    db = sqlite3.connect(index_path)
    texts = [row[0] for row in db.execute("SELECT text FROM passages ORDER BY rowid")]
    db.close()
    english: list[str] = []
    chinese: list[str] = []
    while len(english) < count or len(chinese) < count:
        text = rng.choice(texts)
        words, runs = _WORD.findall(text), _HAN_RUN.findall(text)
        if words and len(english) < count:
            start = rng.randrange(len(words))
            english.append(" ".join(words[start : start + rng.randint(1, 4)]))
        if runs and len(chinese) < count:
            run = rng.choice(runs)
            size = min(len(run), rng.randint(2, 6))
            start = rng.randrange(len(run) - size + 1)
            chinese.append(run[start : start + size])
    return english, chinese


def timed(index: CorpusIndex, queries: list[str], repeat: int) -> tuple[list[float], int]:
    """Seconds per call, and how many queries found nothing."""
    seconds, empty = [], 0
    for _ in range(repeat):
        for query in queries:
            started = time.perf_counter()
            hits = index.search(query, 5)
            seconds.append(time.perf_counter() - started)
            empty += not hits
    return seconds, empty // repeat


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=PROJECT_ROOT.parent / "shared" / "data")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        stats = build_index(load_documents(args.source), path)
        build_s = time.perf_counter() - started
        size_mb = path.stat().st_size / 1e6
        print(
            f"index: {stats.documents} documents, {stats.passages} passages, {stats.papers} papers, {size_mb:.1f} MB; "
            f"build {build_s:.2f} s (text extraction + indexing)"
        )
        half = args.queries // 2
        english, chinese = sampled_queries(path, half)
        queries = {"en": (ENGLISH + english)[:half], "zh": (CHINESE + chinese)[:half]}
        index = CorpusIndex(path)
        timed(index, queries["en"][:20] + queries["zh"][:20], 1)  # warm-up: page cache, imports
        print(f"{'queries':>10} {'count':>6} {'median':>9} {'p95':>9} {'max':>9} {'no hit':>7}")
        results = {lang: timed(index, qs, args.repeat) for lang, qs in queries.items()}
        results["all"] = ([s for r in results.values() for s in r[0]], sum(r[1] for r in results.values()))
        for lang, (seconds, empty) in results.items():
            count = len(seconds) // args.repeat
            ms = lambda v: f"{v * 1000:.2f} ms"  # noqa: E731
            print(
                f"{lang:>10} {count:>6} {ms(statistics.median(seconds)):>9} {ms(_pct(seconds, 0.95)):>9} {ms(max(seconds)):>9} {empty:>7}"
            )


if __name__ == "__main__":
    main()
