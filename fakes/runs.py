"""Run directories written as the product writes them, for tests and benchmarks: `build_run(root, RunSpec(...))`.

Everything goes through the product's own writers and records (docs/architecture.md, "A run on disk"): config.yaml
and config.hash by `RunStore.open`; tasks/<split>.parquet; each rollout's workspace (its agents' trajectory files,
manuscript and slides, fakes.trajectories; an exported deck's PDF, previews and deck_defects.json, a DeckReport); each
rollout, failed ones too, a unit in units/rollouts/ and rollouts.parquet compacted from them; the verdicts as the
filters stage leaves them (units/verdicts/ and verdicts.parquet: a failed rollout gets one environment verdict, a
rule gate's rejection spares the judges); the tasks stage's StageDone; and, when asked, an export's SFT row count.

A RunSpec is the run's shape (gates, how long the agents work, what they cost) and its RolloutSpecs, one per rollout;
`varied_run` and `training_run` make the two shapes most tests want. A root that is a run already keeps its config:
the spec's rollouts are added to it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from core.defects import Defect
from core.records import (
    Constraints,
    Rollout,
    StageDone,
    Task,
    Trajectory,
    Usage,
    Verdict,
    read_parquet,
    rollout_id,
    task_of,
    verdict_unit,
)
from core.run.reader import SPLITS, TRAJECTORY, TRAJECTORY_FILE, RunReader
from core.run.store import RunStore, atomic_write_parquet, atomic_write_text
from core.run.usage import RoleUsage
from core.seams.candidate import Candidate
from core.seams.deck import FILE as DECK_FILE
from core.seams.deck import DeckPptx, DeckReport, DeckSlide
from fakes.decks import PAGE_SIZES, write_deck
from fakes.trajectories import SLIDE_PX, play, save, slide_png, slide_text
from filters.acceptance import ENVIRONMENT
from filters.config import DEFAULT_GATES
from filters.gates import environment_verdict
from filters.registry import GATES as GATE_SPECS

GATES = ("constraint", "consistency", "quality")
SOURCES = ("persona", "arxiv", "finepdfs")
LICENCES = {"persona": "CC-BY-NC-SA-4.0", "arxiv": "CC-BY-4.0", "finepdfs": "ODC-By-1.0"}
BROKEN_IMAGE = Defect("broken_image", "critical", "img.hero", "img assets/missing.png file not found")
LOW_CONTRAST = Defect("low_contrast", "major", "p.note", "contrast 2.1:1")
SLIDE_FIDELITY = {
    "words": 40,
    "words_kept": 0.975,
    "displacement_px": {"median": 0.4, "max": 2.5},
    "line_count_changed": 0,
    "ssim": 0.99,
}


@dataclass(frozen=True)
class RolloutSpec:
    """One rollout: its task, what its agents made, how it ended and what the gates said."""

    task_id: str
    source: str = "persona"  # persona | arxiv | finepdfs
    language: str = "en"  # en | zh
    aspect: str = "16:9"  # 16:9 | 4:3 | A1
    asked_slides: int | None = None  # the task's slide count; None: free
    split: str = "train"  # train | eval
    slides: int = 3  # slides the presenter writes and the deck exports; 0: no manuscript, slides or deck
    revision: str | None = None  # a critic finding on slide 1's title, answered: fix | ignore | other (an unrelated edit)
    broken_image: bool = False  # slide 1 shows an image that does not exist (measured: broken_image)
    repeated: bool = False  # every slide says the same thing
    warned: bool = False  # a context-budget warning on the presenter's last observation
    defects: tuple[tuple[int, Defect], ...] = ()  # (slide, defect) the export measured, besides a broken image
    failure: str | None = None  # a failed rollout (e.g. environment/timeout): its researcher's trajectory only, no deck
    exported: bool = True  # False: the rollout names its deck, but the export wrote none
    recorded: tuple[str, ...] | None = None  # the artifacts its record names (None: every one it has)
    rejected_by: str | None = None  # the gate whose verdict rejects it


@dataclass(frozen=True)
class RunSpec:
    """A run's shape and its rollouts."""

    rollouts: tuple[RolloutSpec, ...] = ()
    gates: tuple[str, ...] | None = GATES  # filters.gates in config.yaml; None: not set (the default gates)
    config: Mapping[str, Any] = field(default_factory=dict)  # more of config.yaml, by top-level key
    verdicts: bool = True  # the filters have run
    model: str = "test-model"
    policy: str = "model"  # model | scripted (its rollouts also estimate their agents' tokens)
    steps: int = 0  # work turns each agent takes before its own output (fakes.trajectories)
    steps_max: int | None = None  # when set, each agent draws its work turns from [steps, steps_max]
    observation_chars: int = 400  # each work turn's observations
    reasoning: bool = True  # work and finalize turns carry reasoning
    render_size: tuple[int, int] | None = None  # the renders' size; None: the slide's
    rollout_cost_usd: float = 0.01  # what each finished rollout's model calls cost
    judge_cost_usd: float = 0.0  # what each judge verdict's call cost (0: no usage recorded)
    sft_samples: int = 0  # rows of sft/train.jsonl (an export's count, not its content); 0: no export
    seed: int = 0


def build_run(root: Path, spec: RunSpec) -> Path:
    """Write `spec` as a run directory at `root` (or add its rollouts to the run there); returns the run's root."""
    store = _store(root, spec)
    rng = random.Random(spec.seed)
    tasks: dict[str, list[Task]] = {split: [] for split in SPLITS}
    for rollout_spec in spec.rollouts:
        if task_of(rollout_spec.task_id) == rollout_spec.task_id:  # a task's extra rollouts (<id>~k) share its row
            tasks[rollout_spec.split].append(_task(rollout_spec))
        store.commit("rollouts", rollout_spec.task_id, _rollout(store.root, rollout_spec, spec, rng))
        for verdict in _verdicts(rollout_spec, spec) if spec.verdicts else ():
            store.commit("verdicts", verdict_unit(verdict.task_id, verdict.gate), verdict)
    for split, added in tasks.items():
        path = store.path("tasks", f"{split}.parquet")
        path.parent.mkdir(exist_ok=True)
        atomic_write_parquet([*(read_parquet(path, Task) if path.is_file() else ()), *added], path, Task)
    store.compact("rollouts", Rollout)
    if spec.verdicts:
        store.compact("verdicts", Verdict)
    if not store.is_done("stages", "tasks"):
        figures = {"written": len(spec.rollouts)} | {split: len(added) for split, added in tasks.items()}
        store.commit("stages", "tasks", StageDone(stage="tasks", figures_json=json.dumps(figures)))
    if spec.sft_samples:
        store.path("sft").mkdir(exist_ok=True)
        atomic_write_text(store.path("sft", "train.jsonl"), '{"messages": []}\n' * spec.sft_samples)
        atomic_write_text(store.path("sft", "val.jsonl"), "")
    return store.root


def candidate(root: Path, spec: RolloutSpec) -> Candidate:
    """One finished rollout as a gate sees it: `spec` built (without verdicts) into the run at `root`."""
    build_run(root, RunSpec((spec,), verdicts=False))
    reader = RunReader(root)
    rollout = next(r for r in reader.rollouts() if r.task_id == spec.task_id)
    return Candidate(reader.tasks_of([spec.task_id])[spec.task_id], rollout, reader)


def varied_run(rollouts: int, seed: int = 0) -> RunSpec:
    """A run of the scripted policy as varied as a real one: sources, languages, aspect ratios and slide counts (3-12)
    drawn; every third rollout answers a critic finding, every tenth (from the fifth) is warned and every tenth (from
    the tenth) fails; a quarter or so rejected by a gate; slide 2 of every deck measured low_contrast; an export of
    half as many SFT samples as rollouts."""
    rng = random.Random(seed)
    specs = []
    for i in range(rollouts):
        source, language = rng.choice(SOURCES), rng.choice(("en", "zh"))
        specs.append(
            RolloutSpec(
                f"{source}-{i:05d}",
                source,
                language,
                rng.choice(("16:9", "4:3")),
                asked_slides=rng.choice((None, 6, 12)),
                slides=rng.randint(3, 12),
                revision="fix" if i % 3 == 0 else None,
                warned=i % 10 == 4,
                defects=((2, LOW_CONTRAST),),
                failure="environment/timeout" if i % 10 == 9 else None,
                rejected_by=rng.choice((*GATES, *[None] * 8)),
            )
        )
    return RunSpec(tuple(specs), model="scripted-policy", policy="scripted", sft_samples=rollouts // 2, seed=seed)


def training_run(tasks: int = 4, failed: int = 1, eval_tasks: int = 0, rejected_every: int = 4, **shape: Any) -> RunSpec:
    """A run for the export: task-0000... are `tasks` finished train tasks (each `rejected_every`-th rejected by the
    quality gate), then `failed` failed ones, then `eval_tasks` finished ones of the eval split; sources and languages
    take turns. Each agent works 3 turns (320x180 renders) and makes no deck; `shape` changes the RunSpec."""
    specs = []
    for i in range(tasks + failed + eval_tasks):
        specs.append(
            RolloutSpec(
                f"task-{i:04d}",
                SOURCES[i % 3],
                "en" if i % 2 else "zh",
                split="eval" if i >= tasks + failed else "train",
                slides=0,
                failure="environment/timeout" if tasks <= i < tasks + failed else None,
                rejected_by="quality" if i % rejected_every == rejected_every - 1 else None,
            )
        )
    return RunSpec(tuple(specs), **{"steps": 3, "render_size": (320, 180), **shape})


def preference_run(tasks: int = 2, per_task: int = 3) -> RunSpec:
    """`per_task` rollouts of each task (keyed as rollouts.per_task keys them): the first accepted, the second rejected
    by the quality gate, the third failed (its researcher's trajectory only), and so on in turn."""
    fates: list[dict[str, Any]] = [{}, {"rejected_by": "quality"}, {"failure": "environment/timeout"}]
    specs = [
        RolloutSpec(rollout_id(f"task-{i:04d}", k), language="en", slides=2, **fates[k % 3])
        for i in range(tasks)
        for k in range(per_task)
    ]
    return RunSpec(tuple(specs), steps=2, render_size=(320, 180))


def _store(root: Path, spec: RunSpec) -> RunStore:
    if (root / "config.yaml").is_file():
        return RunStore(root)
    config: dict[str, Any] = {"run": {"name": root.name}, "llm": {"model": spec.model}}
    if spec.gates is not None:
        config["filters"] = {"gates": list(spec.gates)}
    return RunStore.open(root, config | dict(spec.config))


def _task(spec: RolloutSpec) -> Task:
    return Task(
        task_id=spec.task_id,
        source=spec.source,
        instruction=f"Make a short deck about <b>tides</b> & the moon for task {spec.task_id}.",
        language=spec.language,
        constraints=Constraints(spec.asked_slides, spec.asked_slides, spec.aspect, spec.language),
        provenance={"id": spec.task_id, "licence": LICENCES.get(spec.source, ""), "writer": "synthetic"},
        split=spec.split,
    )


def _rollout(root: Path, spec: RolloutSpec, run: RunSpec, rng: random.Random) -> Rollout:
    folder = f"rollouts/{spec.task_id}"
    trajectories = play(spec, run, rng, root / folder)
    artifacts = {TRAJECTORY + t.agent: f"{folder}/{TRAJECTORY_FILE.format(agent=t.agent)}" for t in trajectories}
    for t in trajectories:
        save(root / artifacts[TRAJECTORY + t.agent], t.to_json())
    if spec.slides:
        artifacts["manuscript"] = f"{folder}/manuscript.md"
    if spec.slides and not spec.failure:
        deck = {"slides": "slides", "pdf": "deck.pdf", "previews": "previews", "defects": DECK_FILE}
        artifacts |= {name: f"{folder}/{path}" for name, path in deck.items()}
        if spec.exported:
            _export(root / folder, spec)
    if spec.recorded is not None:
        artifacts = {name: path for name, path in artifacts.items() if name in spec.recorded}
    calls = [c for t in trajectories for m in t.messages if m.role == "assistant" and m.kind != "critic" for c in m.tool_calls]
    findings = Counter(f["category"] for t in trajectories for i in t.injections for f in json.loads(i.findings_json))
    return Rollout(
        task_id=spec.task_id,
        status="failed" if spec.failure else "done",
        failure=spec.failure,
        artifacts=artifacts,
        steps={t.agent: len(t.steps) for t in trajectories},
        tool_counts=dict(Counter(c.name for c in calls)),
        injections=sum(len(t.injections) for t in trajectories),
        findings=dict(findings),
        wall_s=60.0 + 10 * spec.slides,
        policy=run.policy,
        usage={} if spec.failure else {"agent": _usage(trajectories, run.rollout_cost_usd)},
        estimated_tokens={t.agent: t.usage for t in trajectories} if run.policy == "scripted" else {},
    )


def _usage(trajectories: list[Trajectory], cost_usd: float) -> RoleUsage:
    tokens = sum((t.usage for t in trajectories), Usage())
    calls = sum(len(t.steps) for t in trajectories)
    return RoleUsage(calls, 0, tokens.prompt_tokens, tokens.completion_tokens, cost_usd=cost_usd, latency_s=1.5 * calls)


def _export(workspace: Path, spec: RolloutSpec) -> None:
    """What the deck export leaves: the PDF (PyMuPDF: each slide's heading and body), previews, deck_defects.json."""
    numbers = range(1, spec.slides + 1)
    texts = [slide_text(spec, n) for n in numbers]
    write_deck(
        workspace / "deck.pdf",
        [PAGE_SIZES[spec.aspect]] * spec.slides,
        [b for _, b in texts],
        [f"{n}. {t}" for n, (t, _) in zip(numbers, texts)],
    )
    measured = ((1, BROKEN_IMAGE),) * spec.broken_image + spec.defects
    slides = []
    for n in numbers:
        png = f"previews/slide_{n:02d}.png"
        save(workspace / png, slide_png(SLIDE_PX[spec.aspect], n + 1))
        slides.append(DeckSlide(f"slides/slide_{n:02d}.html", png, tuple(d for at, d in measured if at == n), SLIDE_FIDELITY))
    deck = {"slides": spec.slides, "words": 40 * spec.slides, "tables": 1, "pictures": 2, "within_targets": True}
    fidelity = {"renderer": "LibreOffice 7.4.7.2", "seconds": 4.2, "deck": {**SLIDE_FIDELITY, **deck}}
    DeckReport(spec.aspect, tuple(slides), DeckPptx("editable", fidelity)).write(workspace / DECK_FILE)


def _verdicts(spec: RolloutSpec, run: RunSpec) -> list[Verdict]:
    """A failed rollout's environment verdict; else each configured gate's, in pipeline order (a rule gate's rejection
    spares the judges)."""
    if spec.failure:
        return [environment_verdict(spec.task_id, ENVIRONMENT, spec.failure)]
    configured = [gate for gate in GATE_SPECS if gate in (run.gates if run.gates is not None else DEFAULT_GATES)]
    ruled_out = spec.rejected_by in configured and GATE_SPECS[spec.rejected_by].role is None
    verdicts = []
    for gate in configured:
        role = GATE_SPECS[gate].role
        if role is not None and ruled_out:
            continue
        cost = {role: RoleUsage(1, 0, 900, 60, cost_usd=run.judge_cost_usd)} if role is not None and run.judge_cost_usd else {}
        if gate == spec.rejected_by:
            verdicts.append(Verdict(spec.task_id, gate, False, gate, 0.0, (f"{gate} failed: <slide 3> & more",), cost))
        else:
            verdicts.append(Verdict(spec.task_id, gate, True, None, 1.0, usage=cost))
    return verdicts
