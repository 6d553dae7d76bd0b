"""Stage 1, tasks: sources -> written requests -> cleaning -> constraints -> train/eval split.

    python -m pipeline.tasks run.name=NAME [limit=N] [llm=...]     # this stage alone

Writes `tasks/train.parquet`, `tasks/eval.parquet` (Task records; loadable as a
`datasets.DatasetDict`) and `tasks/stats.md` (the task mix and the cleaning funnel).
Every written draft and every quality-gate verdict is a unit of the run store (with its
usage and the templates and model that made it), so a rerun after a crash repeats no model call.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Iterable, Sequence, TypeVar

import hydra
from omegaconf import DictConfig
from rich.progress import Progress

from core.llm.players import Players
from core.logs import console
from core.protocols import Play, TaskWriter
from core.records import Record, StageDone, Task, Verdict
from core.run.context import RunContext
from core.run.ledger import SpendingCap, play_unit, spending_cap
from core.run.store import atomic_write_parquet, atomic_write_text
from core.seams.drafts import SourceDoc, TaskDraft, WriteJob
from pipeline.augment import constraint_text, draw_constraints, slide_bucket
from pipeline.checklists import checklist_by, rule_checklist
from pipeline.cleaning import contamination_groups, drop_near_duplicates, language_mismatch, stratified_group_split
from pipeline.config import SynthesizeConfig, store_schema
from pipeline.preflight import preflight
from pipeline.sources import DOCUMENT_SOURCES, LoadReport, load_source
from pipeline.stages import require_input, run_stages
from pipeline.task_writer import ROLE, LLMTaskWriter, ScriptedTaskWriter

log = logging.getLogger(__name__)
R = TypeVar("R", bound=Record)
SOURCE_NAMES = {"persona": "PersonaHub", "finepdfs": "FinePDFs", "arxiv": "arXiv"}
LIBRARY_SIZE = 50  # documents per source the scripted writer may ground persona tasks in


@dataclass
class Funnel:
    steps: list[tuple[str, int]] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)

    def step(self, name: str, count: int) -> None:
        self.steps.append((name, count))


def plan_jobs(cfg: SynthesizeConfig, total: int, report: LoadReport) -> list[WriteJob]:
    """How many tasks each source gets (by share), and from which document, mode and audience."""
    enabled = [(name, src) for name, src in vars(cfg.sources).items() if src.enabled and src.share > 0]
    counts = {name: round(total * src.share) for name, src in enabled}
    if enabled:
        counts[enabled[0][0]] += total - sum(counts.values())
    jobs: list[WriteJob] = []
    for name, src in enabled:
        n = counts[name]
        if n <= 0:
            continue
        docs = list(itertools.islice(load_source(name, src, report), n))
        if not docs:
            log.warning("source %s yielded no usable document", name)
            continue
        jobs += [_job(cfg, name, k, docs[k % len(docs)]) for k in range(n)]
    return jobs


def _job(cfg: SynthesizeConfig, source: str, k: int, doc: SourceDoc) -> WriteJob:
    rng = random.Random(f"{cfg.run.seed}:job:{source}:{k}")
    draft_id = f"{source}-{k:05d}"
    if source in DOCUMENT_SOURCES:
        return WriteJob(draft_id, doc, "document", doc.language, rng.choice(cfg.tasks.audiences), rng.choice(cfg.tasks.scenarios))
    mode = "knowledge" if rng.random() < cfg.tasks.knowledge_grounded_share else "open"
    return WriteJob(draft_id, doc, mode, "zh" if rng.random() < cfg.tasks.persona_zh_share else "en")


def library(cfg: SynthesizeConfig) -> list[SourceDoc]:
    """The documents of the enabled document sources: what the scripted writer grounds persona tasks in."""
    enabled = [(name, src) for name, src in vars(cfg.sources).items() if name in DOCUMENT_SOURCES and src.enabled]
    return [doc for name, src in enabled for doc in itertools.islice(load_source(name, src, LoadReport()), LIBRARY_SIZE)]


def writer_play(cfg: SynthesizeConfig) -> Play[TaskWriter]:
    """The task writer role's players: a model writing from a persona or document, or (scripted) the rule-based
    writer grounding persona tasks in the enabled sources' documents."""
    return Play(
        lambda client: LLMTaskWriter(client, cfg.tasks.json_retries),
        lambda _: ScriptedTaskWriter(cfg.tasks.min_chars, cfg.tasks.max_chars, library(cfg)),
    )


async def _units(
    ctx: RunContext,
    stage_name: str,
    ids: Sequence[str],
    make: Callable[[str], Awaitable[R]],
    cls: type[R],
    label: str,
    cap: SpendingCap | None,
) -> dict[str, R]:
    """Run `make` for each id not yet done (bounded, with progress), committing each result as a unit;
    once the run's spending cap is reached no new one starts, and the stage stops with BudgetExhausted."""
    done = ctx.store.done(stage_name)
    todo = [i for i in ids if i not in done]
    slots = asyncio.Semaphore(ctx.cfg.llm.max_concurrency)

    async def one(unit_id: str) -> None:
        async with slots:
            await play_unit(ctx.store, stage_name, unit_id, lambda: make(unit_id), cap)
        progress.advance(bar)

    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task(label, total=len(ids), completed=len(ids) - len(todo))
        await asyncio.gather(*(one(i) for i in todo))
    if cap is not None and cap.held_back:
        raise cap.stop("tasks")
    finished = ctx.store.load_map(stage_name, cls)
    return {i: finished[i] for i in ids}


async def build_tasks(ctx: RunContext) -> dict[str, Any]:
    async with Players(ctx.cfg.llm, ctx.cfg.roles) as players:
        return await _build_tasks(ctx, players.play(ROLE, writer_play(ctx.cfg)), players)


async def _build_tasks(ctx: RunContext, writer: TaskWriter, players: Players) -> dict[str, Any]:
    cfg: SynthesizeConfig = ctx.cfg
    total = min(cfg.tasks.count, cfg.limit or cfg.tasks.count)
    report = LoadReport()
    jobs = {j.draft_id: j for j in plan_jobs(cfg, total, report)}
    skipped = ", ".join(f"{k} {v}" for k, v in report.skipped.items()) or "none skipped"
    require_input(ctx, "tasks", len(jobs), "source documents", f"no enabled source yielded one (sources.*; {skipped})")
    await players.check()  # a reachable endpoint before any spending
    cap = spending_cap(cfg.run, ctx.store.root)
    drafts = await _units(ctx, "task_drafts", list(jobs), lambda i: writer.write(jobs[i]), TaskDraft, "writing tasks", cap)

    funnel = Funnel()
    funnel.dropped.update(report.skipped)
    funnel.step("written", len(drafts))
    kept = []
    for draft in (drafts[i] for i in jobs):
        if draft.dropped:
            funnel.dropped[f"writer/{draft.dropped}"] += 1
        elif language_mismatch(draft.instruction, draft.language):
            funnel.dropped["language_mismatch"] += 1
        else:
            kept.append(draft)
    funnel.step("parsed, language checked", len(kept))
    duplicates = set(drop_near_duplicates([d.instruction for d in kept], cfg.tasks.dedup_threshold))
    funnel.dropped["near_duplicate"] += len(duplicates)
    kept = [d for i, d in enumerate(kept) if i not in duplicates]
    funnel.step("deduplicated", len(kept))
    gate: dict[str, Verdict] = {}
    if cfg.tasks.quality_gate:
        by_id = {d.draft_id: d for d in kept}

        async def judge(draft_id: str) -> Verdict:
            ok, reason = await writer.keep(by_id[draft_id].instruction, bool(by_id[draft_id].attachments))
            return Verdict(
                task_id=draft_id, gate="task_quality", passed=ok, category=None if ok else "quality", reasons=(reason,)
            )

        gate = await _units(ctx, "task_gate", list(by_id), judge, Verdict, "quality gate", cap)
        funnel.dropped["quality_gate"] += sum(not v.passed for v in gate.values())
        kept = [d for d in kept if gate[d.draft_id].passed]
        funnel.step("quality gate", len(kept))

    tasks = [_task(cfg, d, gate.get(d.draft_id)) for d in kept]
    groups = contamination_groups(tasks, [d.doc_id for d in kept], cfg.tasks.decontam_threshold)
    eval_size = round(cfg.tasks.eval_size * len(tasks) / cfg.tasks.count) if tasks else 0
    train_idx, eval_idx = stratified_group_split(
        [f"{t.source}/{t.language}" for t in tasks], groups, max(1, eval_size) if len(tasks) > 1 else 0, cfg.run.seed
    )
    train = [replace(tasks[i], split="train") for i in train_idx]
    held_out = [replace(tasks[i], split="eval") for i in eval_idx]
    funnel.step("train", len(train))
    funnel.step("eval", len(held_out))
    folder = ctx.store.path("tasks")
    folder.mkdir(exist_ok=True)
    atomic_write_parquet(train, folder / "train.parquet", Task)
    atomic_write_parquet(held_out, folder / "eval.parquet", Task)
    atomic_write_text(folder / "stats.md", stats_markdown(train, held_out, funnel, cfg, writer.name))
    figures = {
        "written": len(drafts),
        "train": len(train),
        "eval": len(held_out),
        "dropped": sum(funnel.dropped.values()),
        "limited": total < cfg.tasks.count,
    }
    ctx.store.commit("stages", "tasks", StageDone(stage="tasks", figures_json=json.dumps(figures)))
    return figures


def _task(cfg: SynthesizeConfig, draft: TaskDraft, gate: Verdict | None) -> Task:
    rng = random.Random(f"{cfg.run.seed}:constraints:{draft.draft_id}")
    constraints = draw_constraints(rng, cfg.tasks.constraints, draft.language)
    extra = constraint_text(constraints, draft.language)
    task = Task(
        task_id=draft.draft_id,
        source=draft.source,
        instruction=f"{draft.instruction}\n\n{extra}" if extra else draft.instruction,
        language=draft.language,
        attachments=draft.attachments,
        constraints=constraints,
        provenance=draft.provenance | {"writer": draft.writer, "doc_id": draft.doc_id},
        origin=draft.origin | gate.origin if gate is not None else draft.origin,
    )
    return replace(
        task, checklist=rule_checklist(task) + draft.checks, checklist_by=checklist_by(draft.writer, bool(draft.checks))
    )


def _matches(field: Callable[[Task], object], value: object) -> Callable[[Task], bool]:
    """A row's test: the task's `field` is `value`."""
    return lambda t: field(t) == value


def _table(title: str, rows: Iterable[tuple[str, Callable[[Task], bool]]], train: list[Task], held_out: list[Task]) -> list[str]:
    every = train + held_out
    lines = [f"| {title} | train | eval | all | % |", "|---|---:|---:|---:|---:|"]
    for label, match in rows:
        counts = [sum(map(match, part)) for part in (train, held_out, every)]
        lines.append(f"| {label} | {counts[0]} | {counts[1]} | {counts[2]} | {100 * counts[2] / max(1, len(every)):.1f} |")
    return lines + [""]


def stats_markdown(train: list[Task], held_out: list[Task], funnel: Funnel, cfg: SynthesizeConfig, writer: str) -> str:
    """Table 1 of the paper (task mix by language, source, aspect ratio, slide count) and the funnel."""
    mix = cfg.tasks.constraints
    languages = sorted({t.language for t in train + held_out})
    lines = [f"# Tasks: {len(train)} train, {len(held_out)} eval", "", f"Writer: `{writer}`.", ""]
    lines += _table("Language", [(lang, _matches(lambda t: t.language, lang)) for lang in languages], train, held_out)
    lines += _table(
        "Source", [(SOURCE_NAMES.get(s, s), _matches(lambda t: t.source, s)) for s in vars(cfg.sources)], train, held_out
    )
    aspects = [(a if a != "A1" else "A1 poster", _matches(lambda t: t.constraints.aspect_ratio or "free", a)) for a in mix.aspect]
    lines += _table("Aspect ratio", aspects, train, held_out)
    buckets = [(b, _matches(lambda t: slide_bucket(t.constraints, mix.slides), b)) for b in mix.slides]
    lines += _table("Slide count", buckets, train, held_out)
    lines += ["## Cleaning funnel", "", "| step | tasks |", "|---|---:|"]
    lines += [f"| {name} | {count} |" for name, count in funnel.steps]
    lines += ["", "| dropped because | count |", "|---|---:|"]
    lines += [f"| {reason} | {count} |" for reason, count in sorted(funnel.dropped.items())] or ["| (nothing) | 0 |"]
    return "\n".join(lines) + "\n"


def run_tasks(ctx: RunContext) -> dict[str, Any]:
    if ctx.store.is_done("stages", "tasks"):
        log.info("tasks: already built, skipping")
        return json.loads(ctx.store.load_unit("stages", "tasks", StageDone).figures_json)
    return asyncio.run(build_tasks(ctx))


@hydra.main(config_path="../configs", config_name="synthesize", version_base=None)
def main(cfg: DictConfig) -> None:
    run_stages(cfg, {"tasks": run_tasks}, "tasks", preflight)


if __name__ == "__main__":
    store_schema()  # configs/synthesize.yaml names it; Hydra composes when main is called
    main()
