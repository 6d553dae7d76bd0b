"""Eval stage 2: every deck scored (Constraint, Content, Style), Diversity across decks, the run's summary.

Each deck's scores are a unit (`units/eval_scores/<task_id>.json`, a `DeckScores` record with
the judge's usage and the describer's and judge's templates and models), so a rerun scores only
the decks not scored yet, and the ledger counts each judge call once; a deck the judge could not
score is left for the rerun. Writes `<run>/scores/`: decks.csv (one row per task),
judgements.jsonl (every slide's description, scores and reasons), summary.json (the run's line in
the tables). Judge descriptions, scores and encoder features are also cached under
`judge.cache_dir` (default `<run>/judge_cache`), which other runs may share.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional

from core.config import resolve_role
from core.failures import Failure
from core.llm.players import Players, StandIns, policy_of
from core.records import SCHEMA_VERSION, Origin, Record, Rollout, RolloutStatus, Task
from core.run.context import RunContext
from core.run.ledger import SpendingCap, play_unit, read_ledger, spending_cap
from core.run.reader import RunReader
from core.run.store import RunStore, atomic_write_text
from core.run.usage import RoleUsage, total
from core.seams.judging import SlideDescription, SlideScores, SlideView
from eval.config import EvalConfig, describer_config
from eval.diversity import ImageEncoder, deck_diversity
from eval.generation import EVAL_SPLIT
from eval.metrics import DeckScore, aggregate, by_domain, constraint_score, unrendered
from eval.slide_judge import DeckJudgement, SlideJudgement, SlideJudging, build_judging, cache_root
from eval.slides import DeckUnreadable, load_deck
from eval.summary import ABLATIONS, RunSummary
from filters.constraints import UnusablePDF

log = logging.getLogger(__name__)

STAGE = "eval/score"
SCORES = "scores"
UNITS = "eval_scores"


@dataclass(frozen=True)
class DeckScores(Record):
    """One deck's scores: the unit of the scoring stage."""

    kind: ClassVar[str] = "deck_scores"
    task_id: str
    score: DeckScore
    judgements_json: str = "[]"  # each slide's number, digest, description and scores
    usage: dict[str, RoleUsage] = field(default_factory=dict)  # the describer's and judge's calls
    origin: Origin = field(default_factory=Origin)
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class ScoredDeck:
    score: DeckScore
    slides: list[SlideView]
    judgement: DeckJudgement | None

    def record(self) -> DeckScores:
        judged = [_judged(j) for j in (self.judgement.slides if self.judgement else ())]
        return DeckScores(self.score.task_id, self.score, json.dumps(judged, ensure_ascii=False))


def _judged(j: SlideJudgement) -> dict[str, Any]:
    return {"number": j.number, "digest": j.digest, "description": j.description.model_dump(), "scores": j.scores.model_dump()}


def slides_of(task: Task, rollout: Rollout, root: Path, render_dir: Path) -> list[SlideView]:
    """A rollout's deck as the judges see it (its PDF's pages rendered under `render_dir`)."""
    return load_deck(
        (root / rollout.artifacts["pdf"]).parent, render_dir, task.constraints.language or task.language, task.instruction
    )


def restored(record: DeckScores, task: Task, rollout: Optional[Rollout], root: Path, render_dir: Path) -> ScoredDeck:
    """A deck scored by an earlier run, from its unit (the slides read again for the diversity encoder)."""
    if not record.score.rendered or rollout is None:
        return ScoredDeck(record.score, [], None)
    slides = [
        SlideJudgement(
            s["number"], s["digest"], SlideDescription.model_validate(s["description"]), SlideScores.model_validate(s["scores"])
        )
        for s in json.loads(record.judgements_json)
    ]
    try:
        views = slides_of(task, rollout, root, render_dir)
    except (UnusablePDF, DeckUnreadable) as exc:
        log.warning("%s: scored before, but its slides are unreadable now (left out of the diversity): %s", task.task_id, exc)
        views = []
    return ScoredDeck(record.score, views, DeckJudgement(tuple(slides)))


async def score_deck(task: Task, rollout: Rollout | None, root: Path, judging: SlideJudging, render_dir: Path) -> ScoredDeck:
    if rollout is None:
        return ScoredDeck(unrendered(task, "not generated", 0.0, 0), [], None)
    tokens = rollout.tokens
    pdf, defects = rollout.artifacts.get("pdf"), rollout.artifacts.get("defects") or rollout.artifacts.get("record")
    if rollout.status != RolloutStatus.done or pdf is None or defects is None:
        return ScoredDeck(unrendered(task, rollout.failure or Failure.no_deck, rollout.cost_usd, tokens), [], None)
    try:
        constraint, failed = constraint_score(root / pdf, task)
        slides = slides_of(task, rollout, root, render_dir)
    except (UnusablePDF, DeckUnreadable) as exc:
        return ScoredDeck(unrendered(task, Failure.unreadable_deck.detailed(f" {exc}"), rollout.cost_usd, tokens), [], None)
    judgement = await judging.deck(slides)
    content_failures = "; ".join(f"slide {s.number}: {', '.join(s.content)}" for s in slides if s.content)
    score = DeckScore(
        task.task_id,
        task.source,
        task.language,
        True,
        len(slides),
        constraint,
        judgement.content,
        judgement.style,
        rollout.cost_usd,
        tokens,
        judgement.error,
        failed,
        content_failures,
    )
    return ScoredDeck(score, slides, judgement)


async def score_all(
    cfg: EvalConfig, tasks: list[Task], rollouts: dict[str, Rollout], store: RunStore, cap: Optional[SpendingCap] = None
) -> list[ScoredDeck]:
    """Every deck's scores: from its unit when an earlier run scored it, else judged now (a unit each)."""
    root, done = store.root, store.load_map(UNITS, DeckScores)
    render_dir = cache_root(cfg.judge, root) / "pages"
    async with Players() as players:
        judging = build_judging(cfg.judge, cache_root(cfg.judge, root), players)

        async def one(task: Task) -> Optional[ScoredDeck]:
            rollout = rollouts.get(task.task_id)
            if task.task_id in done:
                return restored(done[task.task_id], task, rollout, root, render_dir)
            scored: list[ScoredDeck] = []

            async def make() -> Optional[DeckScores]:
                scored.append(await score_deck(task, rollout, root, judging, render_dir))
                unjudged = scored[0].judgement is not None and scored[0].judgement.error is not None
                return None if unjudged else scored[0].record()  # an unjudged deck is judged again by the next run

            await play_unit(store, UNITS, task.task_id, make, cap)
            return scored[0] if scored else None

        decks = await asyncio.gather(*(one(t) for t in tasks))
    if cap is not None and cap.held_back:
        raise cap.stop(STAGE)
    return [d for d in decks if d is not None]


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
            _judged(j) | {"png": s.png.relative_to(root).as_posix() if s.png.is_relative_to(root) else str(s.png)}
            for s, j in zip(deck.slides, deck.judgement.slides if deck.judgement else ())
        ]
        lines.append(
            json.dumps({"task_id": deck.score.task_id, "error": deck.score.failure, "slides": slides}, ensure_ascii=False)
        )
    return "\n".join(lines) + "\n"


def summarize(
    cfg: EvalConfig,
    root: Path,
    decks: list[ScoredDeck],
    diversity: tuple[float | None, float | None],
    judge_usage: dict[str, RoleUsage],
) -> RunSummary:
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
        policy=policy_of(agent),
        describer=describer_config(cfg.judge).model,
        judge=cfg.judge.endpoint.model,
        judge_scripted=policy_of(cfg.judge.endpoint) == StandIns.policy,
        judge_cost_usd=total(judge_usage.values()).cost,
        encoder=cfg.diversity.encoder,
        domains={d: m.to_dict() for d, m in by_domain(scores).items()},
    )


def score(ctx: RunContext) -> dict[str, Any]:
    cfg: EvalConfig = ctx.cfg
    root = ctx.store.root
    run = RunReader(ctx.store.root)
    tasks = run.split(EVAL_SPLIT)
    rollouts = {r.task_id: r for r in run.rollouts()}
    decks = asyncio.run(score_all(cfg, tasks, rollouts, ctx.store, spending_cap(cfg.run, root)))
    diversity: tuple[float | None, float | None] = (None, None)
    if cfg.diversity.encoder:
        encoder = ImageEncoder(cfg.diversity.encoder, cfg.diversity.batch_size, cache_root(cfg.judge, root) / "features")
        diversity = deck_diversity(encoder, [d.slides for d in decks])
    summary = summarize(cfg, root, decks, diversity, read_ledger(root).stages.get(UNITS, {}))
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
