"""Export a run's accepted trajectories as an MS-SWIFT agent-format dataset.

    python -m train.export runs/my-run                      # -> runs/my-run/sft/
    python -m train.export runs/my-run --out DIR --mask-critic --max-length 32768 --truncation truncate
    python -m train.export --validate runs/my-run/sft/train.jsonl [--model-dir DIR]

A rollout is accepted as filters.acceptance decides: it finished and every gate the run's
config.yaml names passed (with no gates, every finished rollout). An undecided one (a
gate's verdict missing, or no verdicts.parquet at all) is left out unless
`--include-undecided`; the card says which rule applied. Each
accepted trajectory becomes samples per agent (train/samples.py: one, unless hidden reasoning splits it); samples over
`max_length` tokens are dropped or cut at the last agent turn that fits. Images are
hard-linked (or copied) under images/<task_id>/ and referenced relative to the export
folder. Tasks, never samples, are split between train.jsonl and val.jsonl.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import logging
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from core.cli import ExitCode, OneLineParser, run_command
from core.llm.conversation import PROFILES
from core.logs import setup_logging
from core.protocols import TokenCounter
from core.records import ArtifactError, Origin, Rollout, Task, Trajectory, TrajectoryStatus
from core.run.reader import RunReader, TrajectoryFile
from core.run.store import atomic_write_text
from core.seams.tokens import TokenCount
from filters.acceptance import UNDECIDED, judged, run_gates
from train.card import render_card
from train.config import ExportConfig, HistoryReasoning, ParityMode, Truncation, validate_export
from train.hub import push_to_hub
from train.parity import Parity, ParityReport
from train.rows import SampleWriter
from train.samples import Sample, SampleError, to_samples
from train.tokens import make_counter
from train.validate import validate_file

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class SampleFacts:
    """What the card and the figures read of an exported sample once its row is written: not its messages (an
    export of 100,000 rollouts holds no sample longer than it takes to write it)."""

    task_id: str
    agent: str
    policy: str
    part: int
    origin: Origin
    images: tuple[Path, ...]
    critic_calls: int

    @classmethod
    def of(cls, sample: Sample) -> SampleFacts:
        return cls(sample.task_id, sample.agent, sample.policy, sample.part, sample.origin, sample.images, sample.critic_calls)


@dataclass(frozen=True)
class Exported:
    sample: SampleFacts
    tokens: TokenCount
    truncated: bool


@dataclass
class ExportReport:
    out_dir: Path
    token_method: str
    acceptance: str  # how rollouts were accepted
    max_length: int
    mask_critic: bool
    rollouts: int = 0
    accepted: int = 0
    rejected: Counter = field(default_factory=Counter)  # category (or undecided) -> rollouts not exported
    train: list[Exported] = field(default_factory=list)
    val: list[Exported] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    tasks: dict[str, Task] = field(default_factory=dict)
    judged: dict[str, Origin] = field(default_factory=dict)  # task_id -> what its verdicts were made by
    parity: Optional[ParityReport] = None  # None: not checked (export.parity=false)

    def origin(self, exported: Exported) -> Origin:
        """What made a sample: its trajectory's, its task's and its verdicts' templates and models."""
        task = self.tasks.get(exported.sample.task_id)
        return exported.sample.origin | (task.origin if task else Origin()) | self.judged.get(exported.sample.task_id, Origin())

    @property
    def samples(self) -> list[Exported]:
        return self.train + self.val

    def figures(self) -> dict[str, Any]:
        """Numbers for the stage log and tracking."""
        samples = self.samples
        return {
            "rollouts": self.rollouts,
            "accepted": self.accepted,
            "train_samples": len(self.train),
            "val_samples": len(self.val),
            "skipped": len(self.skipped),
            "truncated": sum(e.truncated for e in samples),
            "images": sum(len(e.sample.images) for e in samples),
            "tokens": sum(e.tokens.total for e in samples),
            "trained_tokens": sum(e.tokens.trained for e in samples),
            "critic_calls": sum(e.sample.critic_calls for e in samples),
            "parity": self.parity.to_json() if self.parity is not None else None,
        }


# ---------------------------------------------------------------- reading the run


def accepted_rollouts(run: RunReader, include_undecided: bool, report: ExportReport) -> list[Rollout]:
    """The rollouts filters.acceptance accepts under the run's gates (and, if asked, the undecided ones)."""
    gates, verdicts = run_gates(run), run.verdicts()
    if gates and verdicts is None:
        report.acceptance = (
            f"no verdicts.parquet: the gates ({', '.join(gates)}) have not run, so every finished rollout is undecided"
        )
    elif gates:
        report.acceptance = f"every configured gate passed: {', '.join(gates)}"
    else:
        report.acceptance = "no gates configured: every finished rollout is accepted (unfiltered)"
    if include_undecided:
        report.acceptance += "; undecided rollouts included (--include-undecided)"
    by_id = {r.task_id: r for r in run.rollouts()}
    accepted = []
    for outcome in judged(run):
        if outcome.accepted or (include_undecided and outcome.category == UNDECIDED):
            accepted.append(by_id[outcome.task_id])
        else:
            report.rejected[outcome.category] += 1
    return accepted


def _trajectories(run: RunReader, rollout: Rollout, report: ExportReport, finalized: bool = True) -> Iterator[TrajectoryRead]:
    """The rollout's trajectories (only finalized ones unless told); what cannot be read is reported."""
    files = run.trajectory_files(rollout)
    if not files:
        report.skipped.append(Skipped(rollout.task_id, "-", "no trajectory artifact"))
    for file in files:
        try:
            trajectory = run.trajectory(file)
            if finalized and trajectory.status != TrajectoryStatus.finalized:
                raise SampleError(f"trajectory status is {trajectory.status!r}, not finalized")
        except (ArtifactError, SampleError) as exc:
            report.skipped.append(Skipped(rollout.task_id, file.agent, f"{file.path.name}: {_reason(exc, file)}"))
            continue
        yield TrajectoryRead(file, trajectory)


def _reason(exc: Exception, file: TrajectoryFile) -> str:
    return str(exc).removeprefix(f"{file.path}: ")


def trajectory_samples(
    run: RunReader, rollout: Rollout, cfg: ExportConfig, report: ExportReport, finalized: bool = True
) -> list[SampleSource]:
    """The samples of each trajectory of the rollout, each with what it was made from."""
    out = []
    keep = HistoryReasoning(cfg.history_reasoning) is HistoryReasoning.keep
    for read in _trajectories(run, rollout, report, finalized):
        try:
            samples = to_samples(read.trajectory, read.file.workspace, cfg.mask_critic, cfg.profile, keep)
            out += [SampleSource(s, read.trajectory, read.file.workspace) for s in samples]
        except SampleError as exc:
            report.skipped.append(Skipped(rollout.task_id, read.trajectory.agent, f"{read.file.path.name}: {exc}"))
    return out


def training_sources(run: RunReader, cfg: ExportConfig, report: ExportReport) -> Iterator[SampleSource]:
    """The samples of the accepted rollouts of training tasks (eval tasks are never trained on), a rollout's at a
    time: what is read of one rollout is let go before the next."""
    report.rollouts = len(run.rollouts())
    for verdict in run.verdicts() or ():
        report.judged[verdict.task_id] = report.judged.get(verdict.task_id, Origin()) | verdict.origin
    accepted = accepted_rollouts(run, cfg.include_undecided, report)
    report.accepted = len(accepted)
    for rollout in sorted(accepted, key=lambda r: r.task_id):
        task = report.tasks.get(rollout.task_id)
        if task is not None and task.split == "eval":
            report.skipped.append(Skipped(rollout.task_id, "-", "an eval task: never trained on", "eval_task"))
            continue
        yield from trajectory_samples(run, rollout, cfg, report)


def parity_inputs(run: RunReader, cfg: ExportConfig, every_trajectory: bool = False) -> Iterator[SampleSource]:
    """What train.parity checks: the samples the export makes of the run, or with `every_trajectory` the samples
    of every trajectory of every rollout, accepted, failed or unfinished (what the run's models were sent)."""
    report = ExportReport(run.path("sft"), "", "", cfg.max_length, cfg.mask_critic, tasks=run.tasks())
    if not every_trajectory:
        yield from training_sources(run, cfg, report)
        return
    for rollout in sorted(run.rollouts(), key=lambda r: r.task_id):
        yield from trajectory_samples(run, rollout, cfg, report, finalized=False)


# ---------------------------------------------------------------- lengths


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


def source_row(sample: Sample) -> dict[str, Any]:
    return sample.to_swift(image_path=str)


# ---------------------------------------------------------------- splitting and writing


def val_tasks(task_ids: list[str], fraction: float, seed: int) -> set[str]:
    """A deterministic share of the tasks (at least one when asked for, never all)."""
    if fraction <= 0 or len(task_ids) < 2:
        return set()
    n = min(max(1, round(len(task_ids) * fraction)), len(task_ids) - 1)
    ranked = sorted(task_ids, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
    return set(ranked[:n])


def export_run(run: RunReader, cfg: ExportConfig) -> ExportReport:
    """Export the accepted trajectories of `run` to `cfg.out_dir` (default <run>/sft)."""
    validate_export(cfg)
    out_dir = Path(cfg.out_dir).resolve() if cfg.out_dir else run.path("sft")
    counter = make_counter(cfg.model_dir, cfg.template, cfg.agent_template)
    report = ExportReport(out_dir, counter.method, "", cfg.max_length, cfg.mask_critic, tasks=run.tasks())
    exported: list[Exported] = []
    mode = ParityMode(cfg.parity)
    parity = Parity(cfg) if mode is not ParityMode.off else None
    with SampleWriter(out_dir, run.path("rollouts"), cfg.link_images) as writer:
        for source in training_sources(run, cfg, report):
            sample = source.sample
            differs = parity.difference(sample, source.trajectory, source.workspace) if parity is not None else None
            if differs is not None and mode is ParityMode.refuse:
                report.skipped.append(Skipped(sample.task_id, sample.agent, f"part {sample.part}: {differs}", "parity"))
                continue
            kept, tokens, why = fit(sample, counter, cfg)
            if kept is None:
                report.skipped.append(Skipped(sample.task_id, sample.agent, why, "too_long"))
            else:
                writer.write(kept)
                exported.append(Exported(SampleFacts.of(kept), tokens, kept is not sample))
        held_out = val_tasks(sorted({e.sample.task_id for e in exported}), cfg.val_fraction, cfg.seed)
        writer.split(held_out)
    report.parity = parity.report if parity is not None else None
    report.train = [e for e in exported if e.sample.task_id not in held_out]
    report.val = [e for e in exported if e.sample.task_id in held_out]
    atomic_write_text(out_dir / "README.md", render_card(report, run))
    run.path("stats").mkdir(exist_ok=True)  # the run's cost per SFT token reads it (stats/usage.json)
    atomic_write_text(run.path("stats", "export.json"), json.dumps(report.figures() | {"out_dir": str(out_dir)}, indent=1))
    log.info("exported %s to %s", report.figures(), out_dir)
    if cfg.push_to_hub:
        push_to_hub(out_dir, cfg.push_to_hub, cfg.hub_private)
    return report


# ---------------------------------------------------------------- CLI


def _parser() -> OneLineParser:
    defaults = ExportConfig()
    parser = OneLineParser(
        prog="python -m train.export", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", nargs="?", type=Path, help="the run directory to export")
    parser.add_argument("--out", type=Path, help="export folder (default: RUN_DIR/sft)")
    parser.add_argument(
        "--validate", type=Path, metavar="FILE", help="check an exported JSONL with MS-SWIFT instead of exporting"
    )
    parser.add_argument("--model-dir", help="local processor files: count and encode with the real template")
    parser.add_argument("--max-length", type=int, default=defaults.max_length)
    parser.add_argument("--truncation", choices=[t.value for t in Truncation], default=defaults.truncation.value)
    parser.add_argument("--mask-critic", action="store_true", help='critic injections get "loss": false')
    parser.add_argument("--val-fraction", type=float, default=defaults.val_fraction)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--template", default=defaults.template)
    parser.add_argument("--agent-template", default=defaults.agent_template)
    parser.add_argument("--copy-images", action="store_true", help="copy images instead of hard-linking them")
    parser.add_argument(
        "--include-undecided", action="store_true", help="also export rollouts a gate gave no verdict (unfiltered data)"
    )
    parser.add_argument("--push-to-hub", metavar="REPO_ID", help="also upload to this Hugging Face dataset repo")
    parser.add_argument("--profile", choices=list(PROFILES), default=defaults.profile, help="of trajectories that record none")
    parser.add_argument(
        "--history-reasoning",
        choices=[m.value for m in HistoryReasoning],
        default=defaults.history_reasoning.value,
        help="split (exact, default) or keep one sample per trajectory, past reasoning in the context",
    )
    parser.add_argument(
        "--parity",
        choices=[m.value for m in ParityMode],
        default=defaults.parity.value,
        help="a sample whose turns differ from the teacher's requests: refuse (default), report, or do not check",
    )
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.validate is None and args.run_dir is None:
        parser.error("give RUN_DIR to export, or --validate FILE")
    setup_logging()
    return run_command(parser.prog, lambda: validate(args) if args.validate else export(args))


def validate(args: argparse.Namespace) -> int:
    report = validate_file(args.validate, args.model_dir, args.template, args.agent_template)
    print(report.summary())
    return ExitCode.done if report.ok else ExitCode.failed


def export(args: argparse.Namespace) -> int:
    cfg = ExportConfig(
        out_dir=str(args.out) if args.out else None,
        max_length=args.max_length,
        truncation=Truncation(args.truncation),
        mask_critic=args.mask_critic,
        val_fraction=args.val_fraction,
        seed=args.seed,
        model_dir=args.model_dir,
        template=args.template,
        agent_template=args.agent_template,
        link_images=not args.copy_images,
        push_to_hub=args.push_to_hub,
        include_undecided=args.include_undecided,
        profile=args.profile,
        parity=ParityMode(args.parity),
        history_reasoning=HistoryReasoning(args.history_reasoning),
    )
    report = export_run(RunReader.open(args.run_dir), cfg)
    figures = report.figures()
    print(f"exported {figures['train_samples']} train / {figures['val_samples']} val samples to {report.out_dir}")
    print(f"accepted {report.accepted} of {report.rollouts} rollouts ({report.acceptance}); tokens: {report.token_method}")
    if report.parity is not None:
        print(report.parity.summary())
    for skipped in report.skipped:
        print(f"  skipped {skipped.task_id}/{skipped.agent}: {skipped.reason}")
    return ExitCode.done


if __name__ == "__main__":
    sys.exit(main())
