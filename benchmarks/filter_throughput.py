"""Throughput of the filter gates over exported decks (for now: the rule-based constraint gate).

    python -m benchmarks.filter_throughput [--decks 500] [--workers 2]

Builds small deck PDFs (3-20 pages; 16:9, 4:3 or A1; English or Chinese text) in a
temp dir, untimed, then runs `check_deck` over all of them: once in this process
(after one warm-up call that loads the language model) and once in a process pool,
timed from the pool's start (worker start-up and warm-up included). Prints decks per
second and the median / p95 time per deck. Target: >= 20 decks/s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from core.language import detect_language
from core.records import Constraints
from filters.config import FiltersConfig
from filters.constraints import check_deck
from tests.filters.decks import CHINESE, CHINESE_WITH_ENGLISH_TERMS, ENGLISH, PAGE_SIZES, write_deck

SHAPES = ("16:9", "4:3", "A1")
TEXTS = {"en": (ENGLISH,), "zh": (CHINESE, CHINESE_WITH_ENGLISH_TERMS)}
CFG = FiltersConfig()


def _build(root: Path, count: int, rng: random.Random) -> list[tuple[Path, Constraints]]:
    decks = []
    for i in range(count):
        pages, shape, lang = rng.randint(3, 20), rng.choice(SHAPES), rng.choice(("en", "zh"))
        texts = [f"{n}. {rng.choice(TEXTS[lang])}" for n in range(1, pages + 1)]
        pdf = write_deck(root / f"deck_{i:04d}.pdf", [PAGE_SIZES[shape]] * pages, texts)
        asked = Constraints(  # about half the constraints are met, some are free
            slides_min=rng.choice((None, pages, 1, 11)),
            slides_max=rng.choice((None, pages, 10, 20)),
            aspect_ratio=rng.choice((None, shape, *SHAPES)),
            language=rng.choice((None, lang, "en", "zh")),
        )
        decks.append((pdf, asked))
    return decks


def _timed(deck: tuple[Path, Constraints]) -> float:
    started = time.perf_counter()
    check_deck(deck[0], deck[1], CFG)
    return time.perf_counter() - started


def _warm() -> None:
    detect_language("warm up the language model")


def _report(label: str, wall_s: float, per_deck: list[float]) -> None:
    p95 = sorted(per_deck)[min(len(per_deck) - 1, int(0.95 * len(per_deck)))]
    print(
        f"{label:<22} {len(per_deck) / wall_s:7.1f} decks/s   wall {wall_s:6.2f} s   "
        f"per deck median {statistics.median(per_deck) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decks", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="filter-bench-") as tmp:
        started = time.perf_counter()
        decks = _build(Path(tmp), args.decks, random.Random(args.seed))
        megabytes = sum(pdf.stat().st_size for pdf, _ in decks) / 1e6
        print(f"built {len(decks)} decks ({megabytes:.1f} MB) in {time.perf_counter() - started:.1f} s (not measured); {os.cpu_count()} CPUs")

        _warm()
        started = time.perf_counter()
        per_deck = [_timed(d) for d in decks]
        _report("sequential", time.perf_counter() - started, per_deck)

        started = time.perf_counter()
        with ProcessPoolExecutor(args.workers, initializer=_warm) as pool:
            per_deck = list(pool.map(_timed, decks, chunksize=8))
        _report(f"pool of {args.workers} processes", time.perf_counter() - started, per_deck)


if __name__ == "__main__":
    main()
