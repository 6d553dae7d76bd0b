"""The release: every trajectory of every rollout, one row each, with how it ended and why (`train.export --release`).

A run keeps as training data only what its gates accepted; everything else it paid for is data too (failures for
preference training, verdicts for judges, defects for renderers). The release writes, per trajectory, accepted or
not: the task, the agent, the conversation as the export makes it (`train/samples.py`: the messages its model read,
in parts where hidden reasoning splits them), its images (placed under images/ as the export places them), the
rollout's status and failure with its meaning (`core/failures.py`), its fate under the run's gates, each gate's
verdict with its score and reasons, the critic's findings, the deck's measured defects, tokens, cost and provenance.
Rows go to Parquet shards of `ROWS_PER_SHARD` (data/part-00000.parquet...), readable by `datasets`; what cannot be
written (an unreadable trajectory file, a rollout without one) is counted by its reason in README.md.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterator, Optional

from core.failures import category_of
from core.iterate import batched
from core.records import (
    SCHEMA_VERSION,
    ArtifactError,
    Record,
    Rollout,
    Task,
    Trajectory,
    Verdict,
    replica_of,
    task_of,
    write_parquet,
)
from core.run.reader import RunReader
from core.run.store import atomic_write_text
from filters.acceptance import ENVIRONMENT, Acceptance, judged, run_gates
from train.config import ExportConfig, HistoryReasoning
from train.export_rollouts import Skipped, read_trajectories
from train.rows import ImageFolder
from train.samples import Sample, SampleError, to_samples

ROWS_PER_SHARD = 1000
BATCH = 512  # rollouts whose tasks and verdicts are read at once
DATA = "data"


@dataclass(frozen=True)
class ReleasedMessage:
    role: str  # system | user | assistant | tool_call | tool_response
    content: str
    loss: Optional[bool] = None  # as in the SFT export: None trained (assistant, tool_call), False context


@dataclass(frozen=True)
class ReleasedSample:
    part: int
    messages: tuple[ReleasedMessage, ...]
    images: tuple[str, ...]  # release-relative paths, in <image> order


@dataclass(frozen=True)
class ReleasedVerdict:
    gate: str
    passed: bool
    category: Optional[str]
    score: Optional[float]
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class ReleasedDefect:
    slide: int  # from 1
    code: str
    severity: str
    element: str
    detail: str


@dataclass(frozen=True)
class ReleaseRow(Record):
    """One trajectory of one rollout, with its outcome."""

    kind: ClassVar[str] = "release_row"
    rollout_id: str  # the rollout's key: the task id, or <task_id>~k for the task's k-th extra rollout
    task_id: str
    replica: int
    split: str
    source: str
    language: str
    instruction: str
    agent: str
    policy: str  # model | scripted
    model: str
    profile: str
    rollout_status: str  # done | failed
    trajectory_status: str  # finalized | failed | running (cut off)
    failure: Optional[str]  # the rollout's, else the trajectory's (core/failures.py code)
    failure_meaning: Optional[str]
    accepted: bool
    outcome: str  # accepted | undecided | the category that rejected it (environment, a gate's)
    outcome_reasons: tuple[str, ...]
    verdicts: tuple[ReleasedVerdict, ...]
    samples: tuple[ReleasedSample, ...]  # the conversation as the SFT export makes it; () when it has no agent turn
    samples_note: str  # why `samples` is empty
    tools: str  # the tool schemas offered (JSON)
    critic_findings: tuple[str, ...]  # each injection's findings (JSON)
    deck_defects: tuple[ReleasedDefect, ...]  # the exported deck's, measured (the rollout's deck, shared by its agents)
    steps: int
    prompt_tokens: int
    completion_tokens: int
    rollout_cost_usd: float
    wall_s: float
    provenance: str  # the task's provenance and the templates and models that made the trajectory (JSON)
    schema_version: int = SCHEMA_VERSION


@dataclass
class ReleaseReport:
    out_dir: Path
    rows: int = 0
    shards: int = 0
    bytes: int = 0
    rollouts: int = 0
    by_status: Counter[str] = field(default_factory=Counter)  # rollout_status/trajectory_status -> rows
    by_outcome: Counter[str] = field(default_factory=Counter)  # accepted | undecided | category -> rows
    by_agent: Counter[str] = field(default_factory=Counter)
    unwritten: Counter[str] = field(default_factory=Counter)  # reason -> trajectories (or rollouts) not written
    no_samples: Counter[str] = field(default_factory=Counter)  # reason -> rows without a conversation

    def add(self, row: ReleaseRow) -> None:
        self.rows += 1
        self.by_status[f"{row.rollout_status}/{row.trajectory_status}"] += 1
        self.by_outcome[row.outcome] += 1
        self.by_agent[row.agent] += 1
        if row.samples_note:
            self.no_samples[row.samples_note.split(":")[0]] += 1

    def figures(self) -> dict[str, Any]:
        return {
            "rollouts": self.rollouts,
            "rows": self.rows,
            "shards": self.shards,
            "bytes_per_row": round(self.bytes / self.rows) if self.rows else 0,
            "by_status": dict(self.by_status),
            "by_outcome": dict(self.by_outcome),
            "by_agent": dict(self.by_agent),
            "unwritten": dict(self.unwritten),
            "without_conversation": dict(self.no_samples),
        }


def _released(sample: Sample, images: ImageFolder) -> ReleasedSample:
    messages = tuple(ReleasedMessage(m.role, m.content, m.loss) for m in sample.messages)
    return ReleasedSample(sample.part, messages, tuple(images.place(sample.task_id, p) for p in sample.images))


def _defects(run: RunReader, rollout: Rollout) -> tuple[ReleasedDefect, ...]:
    try:
        deck = run.deck(rollout)
    except ArtifactError:  # no deck (a failed rollout), or none readable: no measured defects to release
        return ()
    return tuple(
        ReleasedDefect(n, d.code, d.severity, d.element, d.detail)
        for n, slide in enumerate(deck.slides, 1)
        for d in slide.defects
    )


@dataclass(frozen=True)
class RolloutFacts:
    """What each row of a rollout repeats."""

    rollout: Rollout
    task: Task | None
    fate: Acceptance
    verdicts: tuple[ReleasedVerdict, ...]
    defects: tuple[ReleasedDefect, ...]


def release_row(facts: RolloutFacts, trajectory: Trajectory, samples: tuple[ReleasedSample, ...], note: str) -> ReleaseRow:
    rollout, task, fate = facts.rollout, facts.task, facts.fate
    failure = rollout.failure or trajectory.failure
    meaning = category_of(failure)
    usage = trajectory.usage
    key = rollout.task_id
    provenance = {"task": dict(task.provenance) if task else {}, "origin": _origin(trajectory)}
    return ReleaseRow(
        rollout_id=key,
        task_id=task_of(key),
        replica=replica_of(key),
        split=(task.split or "") if task else "",
        source=task.source if task else "",
        language=task.language if task else "",
        instruction=task.instruction if task else "",
        agent=trajectory.agent,
        policy=trajectory.policy,
        model=trajectory.model,
        profile=trajectory.profile or "",
        rollout_status=str(rollout.status),
        trajectory_status=str(trajectory.status),
        failure=failure,
        failure_meaning=meaning.description if meaning else None,
        accepted=fate.accepted,
        outcome="accepted" if fate.accepted else str(fate.category),
        outcome_reasons=fate.reasons,
        verdicts=facts.verdicts,
        samples=samples,
        samples_note=note,
        tools=trajectory.tools_json,
        critic_findings=tuple(i.findings_json for i in trajectory.injections),
        deck_defects=facts.defects,
        steps=len(trajectory.steps),
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        rollout_cost_usd=rollout.cost_usd,
        wall_s=rollout.wall_s,
        provenance=json.dumps(provenance, ensure_ascii=False, sort_keys=True),
    )


def _origin(trajectory: Trajectory) -> dict[str, Any]:
    origin = trajectory.origin
    return {"templates": origin.templates, "models": {role: use.model for role, use in origin.models.items()}}


class ShardWriter:
    """Rows into Parquet shards of `ROWS_PER_SHARD`, in a folder published whole when closed without error."""

    def __init__(self, folder: Path):
        self.folder, self.part = folder, folder.with_name(f".{folder.name}.part")
        shutil.rmtree(self.part, ignore_errors=True)
        self.part.mkdir(parents=True)
        self.pending: list[ReleaseRow] = []
        self.shards = 0

    def write(self, row: ReleaseRow) -> None:
        self.pending.append(row)
        if len(self.pending) >= ROWS_PER_SHARD:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            write_parquet(self.pending, self.part / f"part-{self.shards:05d}.parquet", ReleaseRow)
            self.shards += 1
            self.pending = []

    def close(self) -> int:
        """Publish the shards; their bytes."""
        self._flush()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.part.rename(self.folder)
        return sum(p.stat().st_size for p in self.folder.glob("*.parquet"))


def rollout_facts(run: RunReader) -> Iterator[RolloutFacts]:
    """Each rollout with its task, fate, verdicts and deck defects, `BATCH` rollouts' tasks and verdicts read at once."""
    gates = [ENVIRONMENT, *run_gates(run)]
    for batch in batched(judged(run), BATCH):
        keys = [rollout.task_id for rollout, _ in batch]
        tasks, verdicts = run.tasks_of(keys), run.verdicts_of(keys, gates)
        for rollout, fate in batch:
            judged_by = sorted(verdicts.get(rollout.task_id, ()), key=lambda v: gates.index(v.gate))
            yield RolloutFacts(rollout, tasks.get(rollout.task_id), fate, tuple(map(_verdict, judged_by)), _defects(run, rollout))


def _verdict(v: Verdict) -> ReleasedVerdict:
    return ReleasedVerdict(v.gate, v.passed, v.category, v.score, v.reasons)


def release_run(run: RunReader, cfg: ExportConfig, out_dir: Path | None = None) -> ReleaseReport:
    """Write the release of `run` to `out_dir` (default <run>/release)."""
    out_dir = (out_dir or run.path("release")).resolve()
    report = ReleaseReport(out_dir)
    keep = HistoryReasoning(cfg.history_reasoning) is HistoryReasoning.keep
    images = ImageFolder(out_dir, run.path("rollouts"), cfg.link_images)
    shards = ShardWriter(out_dir / DATA)
    for facts in rollout_facts(run):
        report.rollouts += 1
        skipped: list[Skipped] = []
        for read in read_trajectories(run, facts.rollout, skipped, finalized=False):
            try:
                made = to_samples(read.trajectory, read.file.workspace, cfg.mask_critic, cfg.profile, keep)
                samples, note = tuple(_released(s, images) for s in made), ""
            except SampleError as exc:
                samples, note = (), str(exc)
            row = release_row(facts, read.trajectory, samples, note)
            shards.write(row)
            report.add(row)
        for s in skipped:
            report.unwritten[s.reason.split(": ", 1)[-1]] += 1
    report.bytes = shards.close()
    report.shards = shards.shards
    atomic_write_text(out_dir / "README.md", release_card(report, run))
    run.path("stats").mkdir(exist_ok=True)
    atomic_write_text(run.path("stats", "release.json"), json.dumps(report.figures() | {"out_dir": str(out_dir)}, indent=1))
    return report


def _table(counts: Counter[str], what: str) -> list[str]:
    lines = [f"| {what} | rows |", "|---|---:|"]
    return lines + [f"| {name} | {n:,} |" for name, n in counts.most_common()]


def release_card(report: ReleaseReport, run: RunReader) -> str:
    """The release's dataset card: how to load it, and its outcomes counted."""
    header = ["---", "configs:", "- config_name: default", f"  data_files: {DATA}/*.parquet", "---", ""]
    lines = [
        f"# Every trajectory of run {run.root.name}",
        "",
        f"{report.rows:,} rows (one per trajectory of {report.rollouts:,} rollouts, accepted or not) in {report.shards} "
        f"Parquet shard(s), {report.figures()['bytes_per_row']:,} bytes per row. Image paths are relative to this folder.",
        "",
        "```python",
        f'datasets.load_dataset("parquet", data_files="{DATA}/*.parquet")',
        "```",
        "",
        "## Outcomes",
        "",
        *_table(report.by_outcome, "outcome"),
        "",
        *_table(report.by_status, "rollout / trajectory status"),
        "",
        *_table(report.by_agent, "agent"),
        "",
        "## Left out",
        "",
    ]
    if report.unwritten:
        lines += ["Trajectories (or rollouts without one) that could not be written, by reason:", ""]
        lines += _table(report.unwritten, "reason")
    else:
        lines.append("Nothing: every trajectory of every rollout has its row.")
    if report.no_samples:
        lines += ["", "Rows written without a conversation (`samples` empty, `samples_note` says why):", ""]
        lines += _table(report.no_samples, "reason")
    return "\n".join(header + lines) + "\n"
