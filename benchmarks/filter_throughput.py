"""Throughput of the filters without judge calls: the constraint gate plus the quality gate's measured-defect pre-check.

    python -m benchmarks.filter_throughput [--decks 500] [--workers 2]

Builds a run directory of small exported decks (3-20 pages; 16:9, 4:3 or A1; English
or Chinese text; PDFs by PyMuPDF) with their deck_defects.json (about one deck in five
has a critical measured defect) in a temp dir, untimed. Then, per trajectory, the
constraint gate (`check_deck` on the PDF) and the pre-check (`measured_rejections` on
the defects file, as the quality gate runs it before any judge call): once in this
process (after one warm-up call that loads the language model) and once in a process
pool, timed from the pool's start (worker start-up and warm-up included). Last, the
filters stage itself (`filters.run.judge_rollouts` with gates=[constraint, quality]
and llm=scripted: verdict units fsynced and published, verdicts.parquet, report) over
the same run. Prints trajectories per second and the median / p95 time per trajectory.
Target: >= 20 trajectories/s on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from core.config import LLMConfig
from core.language import detect_language
from core.records import Constraints, Rollout, RolloutStatus, Task, write_parquet
from core.run.reader import RunReader
from core.seams.candidate import Candidate
from fakes.decks import CHINESE, CHINESE_WITH_ENGLISH_TERMS, ENGLISH, PAGE_SIZES, write_deck
from filters.config import FiltersConfig
from filters.constraints import check_deck
from filters.quality import deck_slides, measured_rejections
from filters.run import FilterRunConfig, judge_rollouts

SHAPES = ("16:9", "4:3", "A1")
TEXTS = {"en": (ENGLISH,), "zh": (CHINESE, CHINESE_WITH_ENGLISH_TERMS)}
DEFECTS = (  # (code, severity, element) drawn for the defects files
    ("overlap", "minor", "div.card"),
    ("low_contrast", "major", "p.note"),
    ("overflow", "major", "ul.points"),
    ("text_clipped", "critical", "h1.title"),
    ("broken_image", "critical", "img.hero"),
)
CFG = FiltersConfig()


def _defects(pages: int, rng: random.Random) -> dict[str, object]:
    critical = rng.random() < 0.2
    slides = []
    for n in range(1, pages + 1):
        pool = DEFECTS if critical else DEFECTS[:3]
        found = [
            {"code": c, "severity": s, "element": e, "detail": "measured"} for c, s, e in rng.sample(pool, rng.randint(0, 2))
        ]
        slides.append({"file": f"slides/slide_{n:02d}.html", "png": f"previews/slide_{n:02d}.png", "defects": found})
    return {"aspect": "16:9", "slides": slides}


def _build(root: Path, count: int, rng: random.Random) -> list[Candidate]:
    candidates = []
    for i in range(count):
        task_id = f"bench-{i:04d}"
        workspace = root / "rollouts" / task_id
        workspace.mkdir(parents=True)
        pages, shape, lang = rng.randint(3, 20), rng.choice(SHAPES), rng.choice(("en", "zh"))
        texts = [f"{n}. {rng.choice(TEXTS[lang])}" for n in range(1, pages + 1)]
        write_deck(workspace / "deck.pdf", [PAGE_SIZES[shape]] * pages, texts)
        (workspace / "deck_defects.json").write_text(json.dumps(_defects(pages, rng)), encoding="utf-8")
        asked = Constraints(  # about half the constraints are met, some are free
            slides_min=rng.choice((None, pages, 1, 11)),
            slides_max=rng.choice((None, pages, 10, 20)),
            aspect_ratio=rng.choice((None, shape, *SHAPES)),
            language=rng.choice((None, lang, "en", "zh")),
        )
        task = Task(
            task_id=task_id, source="manual", instruction="benchmark deck", language=lang, constraints=asked, split="train"
        )
        artifacts = {"pdf": f"rollouts/{task_id}/deck.pdf", "defects": f"rollouts/{task_id}/deck_defects.json"}
        candidates.append(
            Candidate(task, Rollout(task_id=task_id, status=RolloutStatus.done, artifacts=artifacts), RunReader(root))
        )
    (root / "tasks").mkdir()
    write_parquet([c.task for c in candidates], root / "tasks" / "train.parquet", Task)
    write_parquet([c.rollout for c in candidates], root / "rollouts.parquet", Rollout)
    return candidates


def _timed(candidate: Candidate) -> float:
    started = time.perf_counter()
    check_deck(candidate.path("pdf"), candidate.task.constraints, CFG)
    measured_rejections(deck_slides(candidate.deck()), CFG.quality_reject_severity.value)
    return time.perf_counter() - started


def _warm() -> None:
    detect_language("warm up the language model")


def _report(label: str, wall_s: float, per_item: list[float]) -> None:
    p95 = sorted(per_item)[min(len(per_item) - 1, int(0.95 * len(per_item)))]
    print(
        f"{label:<40} {len(per_item) / wall_s:7.1f} trajectories/s   wall {wall_s:6.2f} s   "
        f"per trajectory median {statistics.median(per_item) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decks", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="filter-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        candidates = _build(root, args.decks, random.Random(args.seed))
        megabytes = sum(c.path("pdf").stat().st_size for c in candidates) / 1e6
        print(
            f"built {len(candidates)} decks ({megabytes:.1f} MB) in {time.perf_counter() - started:.1f} s (not measured); {os.cpu_count()} CPUs"
        )

        _warm()
        started = time.perf_counter()
        per_item = [_timed(c) for c in candidates]
        _report("sequential", time.perf_counter() - started, per_item)

        started = time.perf_counter()
        with ProcessPoolExecutor(args.workers, initializer=_warm) as pool:
            per_item = list(pool.map(_timed, candidates, chunksize=8))
        _report(f"pool of {args.workers} processes", time.perf_counter() - started, per_item)

        cfg = FilterRunConfig(FiltersConfig(gates=["constraint", "quality"]), LLMConfig(backend="scripted"))
        started = time.perf_counter()
        figures = asyncio.run(judge_rollouts(RunReader(root), cfg))
        wall_s = time.perf_counter() - started
        print(
            f"{'filters stage (units, parquet, report)':<40} {len(candidates) / wall_s:7.1f} trajectories/s   wall {wall_s:6.2f} s   "
            f"({figures['verdicts_written']} verdicts, {figures['accepted']} accepted)"
        )


if __name__ == "__main__":
    main()
