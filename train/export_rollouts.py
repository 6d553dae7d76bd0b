"""Each accepted rollout's samples made, checked against the requests its teacher was sent, and fitted to
max_length: in this process, or spread over `export.workers` processes, returned in the rollouts' order.

The parity check is the export's cost (it encodes every trained turn's request with the template: ~0.45 s a
scripted rollout on one core), and it is the same work for every rollout, so processes divide it. Each process
holds its own tokenizer (~1 GB); at most `WINDOW` rollouts per process are in flight, so memory does not grow
with the run."""

from __future__ import annotations

import bisect
import multiprocessing
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from core.protocols import TokenCounter
from core.records import ArtifactError, Rollout, Trajectory, TrajectoryStatus
from core.run.reader import RunReader, TrajectoryFile
from core.seams.tokens import TokenCount
from train.config import ExportConfig, HistoryReasoning, ParityMode, Truncation
from train.parity import Parity, ParityReport
from train.samples import Sample, SampleError, to_samples
from train.tokens import make_counter

WINDOW = 4  # rollouts in flight per process


@dataclass(frozen=True)
class Skipped:
    task_id: str
    agent: str
    reason: str
    kind: str = "invalid"  # invalid | too_long | eval_task | parity


@dataclass(frozen=True)
class SampleSource:
    """A sample with the trajectory and workspace it was made from."""

    sample: Sample
    trajectory: Trajectory
    workspace: Path


@dataclass(frozen=True)
class TrajectoryRead:
    file: TrajectoryFile
    trajectory: Trajectory


def read_trajectories(
    run: RunReader, rollout: Rollout, skipped: list[Skipped], finalized: bool = True
) -> Iterator[TrajectoryRead]:
    """The rollout's trajectories (only finalized ones unless told); what cannot be read goes to `skipped`."""
    files = run.trajectory_files(rollout)
    if not files:
        skipped.append(Skipped(rollout.task_id, "-", "no trajectory artifact"))
    for file in files:
        try:
            trajectory = run.trajectory(file)
            if finalized and trajectory.status != TrajectoryStatus.finalized:
                raise SampleError(f"trajectory status is {trajectory.status!r}, not finalized")
        except (ArtifactError, SampleError) as exc:
            skipped.append(Skipped(rollout.task_id, file.agent, f"{file.path.name}: {_reason(exc, file)}"))
            continue
        yield TrajectoryRead(file, trajectory)


def _reason(exc: Exception, file: TrajectoryFile) -> str:
    return str(exc).removeprefix(f"{file.path}: ")


def trajectory_samples(
    run: RunReader, rollout: Rollout, cfg: ExportConfig, skipped: list[Skipped], finalized: bool = True
) -> list[SampleSource]:
    """The samples of each trajectory of the rollout, each with what it was made from."""
    out = []
    keep = HistoryReasoning(cfg.history_reasoning) is HistoryReasoning.keep
    for read in read_trajectories(run, rollout, skipped, finalized):
        try:
            samples = to_samples(read.trajectory, read.file.workspace, cfg.mask_critic, cfg.profile, keep)
            out += [SampleSource(s, read.trajectory, read.file.workspace) for s in samples]
        except SampleError as exc:
            skipped.append(Skipped(rollout.task_id, read.trajectory.agent, f"{read.file.path.name}: {exc}"))
    return out


def fit(sample: Sample, counter: TokenCounter, cfg: ExportConfig) -> tuple[Optional[Sample], TokenCount, str]:
    """The sample (cut when allowed) within max_length, its count, and why it was dropped if it was."""
    tokens = counter.count(source_row(sample))
    if tokens.total <= cfg.max_length:
        return sample, tokens, ""
    if Truncation(cfg.truncation) is Truncation.drop:
        return None, tokens, f"{tokens.total} tokens > max_length {cfg.max_length}"
    cuts = sample.cut_points()
    counts: dict[int, TokenCount] = {}

    def over(i: int) -> bool:
        counts[i] = counter.count(source_row(sample.prefix(cuts[i])))
        return counts[i].total > cfg.max_length

    best = bisect.bisect_left(range(len(cuts)), True, key=over) - 1  # the last prefix that fits
    if best < 0:
        return None, tokens, f"even the first agent turn exceeds max_length {cfg.max_length}"
    if best not in counts:
        over(best)
    return sample.prefix(cuts[best]), counts[best], ""


def parity_refusal(parity: Optional[Parity], mode: ParityMode, sample: Sample, source: SampleSource) -> Optional[Skipped]:
    """Why `sample` (made from `source`'s trajectory) is left out when a turn differs from what its teacher was sent
    and `mode` refuses such samples; None when it is kept (or not checked)."""
    differs = parity.difference(sample, source.trajectory, source.workspace) if parity else None
    if differs is None or mode is not ParityMode.refuse:
        return None
    return Skipped(sample.task_id, sample.agent, f"part {sample.part}: {differs}", "parity")


def source_row(sample: Sample) -> dict[str, Any]:
    return sample.to_swift(image_path=str)


@dataclass
class RolloutSamples:
    """What exporting one rollout made: its samples to write (each with its count and whether it was cut), what
    it left out and why, and its parity figures (None: not checked)."""

    kept: list[tuple[Sample, TokenCount, bool]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    parity: Optional[ParityReport] = None


class RolloutExporter:
    """Exports one rollout at a time (one per process: it holds the tokenizers)."""

    def __init__(self, run_root: Path, cfg: ExportConfig, finalized: bool = True):
        self.run = RunReader(run_root)
        self.cfg, self.finalized = cfg, finalized
        self.counter: TokenCounter = make_counter(cfg.model_dir, cfg.template, cfg.agent_template)
        self.mode = ParityMode(cfg.parity)
        self.parity = Parity(cfg) if self.mode is not ParityMode.off else None

    def __call__(self, rollout: Rollout) -> RolloutSamples:
        out = RolloutSamples()
        if self.parity is not None:
            self.parity.report = out.parity = ParityReport(tokenizer=self.parity.report.tokenizer)
        for source in trajectory_samples(self.run, rollout, self.cfg, out.skipped, self.finalized):
            sample = source.sample
            refused = parity_refusal(self.parity, self.mode, sample, source)
            if refused is not None:
                out.skipped.append(refused)
                continue
            kept, tokens, why = fit(sample, self.counter, self.cfg)
            if kept is None:
                out.skipped.append(Skipped(sample.task_id, sample.agent, why, "too_long"))
            else:
                out.kept.append((kept, tokens, kept is not sample))
        return out


def export_rollouts(
    run_root: Path, cfg: ExportConfig, rollouts: Iterable[Rollout], finalized: bool = True
) -> Iterator[RolloutSamples]:
    """Each rollout's export, in order: here when `cfg.workers` is 1, else in that many processes; with `finalized`
    false, trajectories that did not finalize too (a failed rollout's, for preference data)."""
    if cfg.workers <= 1:
        yield from map(RolloutExporter(run_root, cfg, finalized), rollouts)
        return
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited threads or tokenizer state
    with ProcessPoolExecutor(cfg.workers, mp_context=context, initializer=_start, initargs=(run_root, cfg, finalized)) as pool:
        pending: deque[Future[RolloutSamples]] = deque()
        for rollout in rollouts:
            pending.append(pool.submit(_export, rollout))
            if len(pending) >= WINDOW * cfg.workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


_exporter: Optional[RolloutExporter] = None  # the worker process's own


def _start(run_root: Path, cfg: ExportConfig, finalized: bool) -> None:
    global _exporter
    _exporter = RolloutExporter(run_root, cfg, finalized)


def _export(rollout: Rollout) -> RolloutSamples:
    assert _exporter is not None, "the pool's initializer makes the exporter"
    return _exporter(rollout)
