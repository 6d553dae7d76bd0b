"""Eval stage 2: every deck scored (Constraint, Content, Style), Diversity across decks, the run's summary.

Writes `<run>/scores/`: decks.csv (one row per task), judgements.jsonl (every slide's
description, scores and reasons), summary.json (the run's line in the tables). Judge
descriptions, scores and encoder features are cached under `judge.cache_dir` (default
`<run>/judge_cache`), so a rerun re-scores without model calls.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import resolve_role
from core.llm import UsageMeter
from core.models import is_scripted
from core.records import Rollout, Task, read_parquet
from core.run import RunContext
from core.store import atomic_write_text
from eval.config import EvalConfig, describer_config
from eval.diversity import ImageEncoder, deck_diversity
from eval.generation import TASKS
from eval.judge import DeckJudgement, SlideJudging
from eval.judging import ROLES, build_judging, cache_root
from eval.metrics import DeckScore, aggregate, by_domain, constraint_score, unrendered
from eval.slides import DeckUnreadable, SlideView, load_deck
from eval.summary import ABLATIONS, RunSummary
from filters.constraints import UnusablePDF
from pipeline.rollouts import STAGE as ROLLOUTS

log = logging.getLogger(__name__)

STAGE = "eval/score"
SCORES = "scores"


@dataclass(frozen=True)
class ScoredDeck:
    score: DeckScore
    slides: list[SlideView]
    judgement: DeckJudgement | None


async def score_deck(task: Task, rollout: Rollout | None, root: Path, judging: SlideJudging, render_dir: Path) -> ScoredDeck:
    if rollout is None:
        return ScoredDeck(unrendered(task, "not generated", 0.0, 0), [], None)
    tokens = sum(rollout.prompt_tokens.values()) + sum(rollout.completion_tokens.values())
    pdf, defects = rollout.artifacts.get("pdf"), rollout.artifacts.get("defects")
    if rollout.status != "done" or pdf is None or defects is None:
        return ScoredDeck(unrendered(task, rollout.failure or "environment/no_deck", rollout.cost_usd, tokens), [], None)
    try:
        constraint, failed = constraint_score(root / pdf, task)
        slides = load_deck((root / defects).parent, render_dir, task.constraints.language or task.language, task.instruction)
    except (UnusablePDF, DeckUnreadable) as exc:
        return ScoredDeck(unrendered(task, f"environment/unreadable_deck: {exc}", rollout.cost_usd, tokens), [], None)
    judgement = await judging.deck(slides)
    content_failures = "; ".join(f"slide {s.number}: {', '.join(s.content)}" for s in slides if s.content)
    score = DeckScore(
        task.task_id, task.source, task.language, True, len(slides), constraint, judgement.content, judgement.style,
        rollout.cost_usd, tokens, judgement.error, failed, content_failures,
    )  # fmt: skip
    return ScoredDeck(score, slides, judgement)


async def score_all(cfg: EvalConfig, tasks: list[Task], rollouts: dict[str, Rollout], root: Path, meter: UsageMeter) -> list[ScoredDeck]:
    async with AsyncExitStack() as stack:
        judging = build_judging(cfg.judge, meter, cache_root(cfg.judge, root), stack)
        render_dir = cache_root(cfg.judge, root) / "pages"
        return list(await asyncio.gather(*(score_deck(t, rollouts.get(t.task_id), root, judging, render_dir) for t in tasks)))


def decks_csv(decks: list[ScoredDeck]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, DeckScore.columns(), lineterminator="\n")
    writer.writeheader()
    writer.writerows(d.score.row() for d in decks)
    return out.getvalue()


def judgements_jsonl(decks: list[ScoredDeck], root: Path) -> str:
    lines = []
    for deck in decks:
        slides = [
            {"number": j.number, "png": s.png.relative_to(root).as_posix() if s.png.is_relative_to(root) else str(s.png),
             "digest": j.digest, "description": j.description.model_dump(), "scores": j.scores.model_dump()}
            for s, j in zip(deck.slides, deck.judgement.slides if deck.judgement else ())
        ]  # fmt: skip
        lines.append(json.dumps({"task_id": deck.score.task_id, "error": deck.score.failure, "slides": slides}, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def summarize(cfg: EvalConfig, root: Path, decks: list[ScoredDeck], diversity: tuple[float | None, float | None], judge_usage: dict[str, Any]) -> RunSummary:
    scores = [d.score for d in decks]
    metrics = aggregate(scores)
    agent = resolve_role(cfg.llm, cfg.roles, "agent")
    return RunSummary(
        framework=cfg.report.framework,
        model=cfg.report.model or agent.model,
        variant=cfg.report.variant or ABLATIONS[(cfg.agents, cfg.reflection)],
        run_dir=str(root),
        tasks=metrics.tasks,
        rendered=metrics.rendered,
        render_rate=metrics.render_rate,
        unjudged=metrics.unjudged,
        constraint=metrics.constraint,
        content=metrics.content,
        style=metrics.style,
        avg=metrics.avg,
        diversity=diversity[0],
        vendi=diversity[1],
        cost_per_deck=metrics.cost_per_deck,
        tokens_per_deck=metrics.tokens_per_deck,
        policy="scripted" if is_scripted(agent) else "model",
        describer=describer_config(cfg.judge).model,
        judge=cfg.judge.endpoint.model,
        judge_scripted=is_scripted(cfg.judge.endpoint),
        judge_cost_usd=sum(judge_usage.get(role, {}).get("cost_usd", 0.0) for role in ROLES),
        encoder=cfg.diversity.encoder,
        domains={d: m.to_dict() for d, m in by_domain(scores).items()},
    )


def score(ctx: RunContext) -> dict[str, Any]:
    cfg: EvalConfig = ctx.cfg
    root = ctx.store.root
    tasks = read_parquet(ctx.store.path(*TASKS), Task)
    rollouts = ctx.store.load_map(ROLLOUTS, Rollout)
    meter = UsageMeter()
    decks = asyncio.run(score_all(cfg, tasks, rollouts, root, meter))
    ctx.meter.merge(meter.snapshot())
    diversity: tuple[float | None, float | None] = (None, None)
    if cfg.diversity.encoder:
        encoder = ImageEncoder(cfg.diversity.encoder, cfg.diversity.batch_size, cache_root(cfg.judge, root) / "features")
        diversity = deck_diversity(encoder, [d.slides for d in decks])
    summary = summarize(cfg, root, decks, diversity, meter.snapshot())
    out = ctx.store.path(SCORES)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "decks.csv", decks_csv(decks))
    atomic_write_text(out / "judgements.jsonl", judgements_jsonl(decks, root))
    summary.write(root)
    keys = ("render_rate", "constraint", "content", "style", "avg", "diversity", "vendi", "cost_per_deck", "judge_cost_usd")
    figures = {k: getattr(summary, k) for k in keys}
    ctx.tracker.summary({f"eval/{k}": v for k, v in figures.items() if v is not None})
    ctx.tracker.table("eval/decks", DeckScore.columns(), [[d.score.row()[c] for c in DeckScore.columns()] for d in decks])
    return {"tasks": summary.tasks, "rendered": summary.rendered, "unjudged": summary.unjudged, **figures}
