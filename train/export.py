"""Export a run's accepted trajectories as an MS-SWIFT agent-format dataset.

    python -m train.export runs/my-run                      # -> runs/my-run/sft/
    python -m train.export runs/my-run --out DIR --mask-critic --max-length 32768 --truncation truncate
    python -m train.export --validate runs/my-run/sft/train.jsonl [--model-dir DIR]
    python -m train.export runs/my-run --format kto|dpo     # preference data -> runs/my-run/kto|dpo/
    python -m train.export runs/my-run --release            # every trajectory with its outcome -> runs/my-run/release/

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
import json
import logging
import operator
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from core.cli import ExitCode, OneLineParser, run_command
from core.iterate import batched
from core.llm.conversation import PROFILES
from core.logs import setup_logging
from core.records import Origin, Rollout, Task, Verdict, task_of
from core.run.reader import RunReader
from core.run.store import atomic_write_text
from core.seams.tokens import TokenCount
from filters.acceptance import ENVIRONMENT, UNDECIDED, judged, run_gates
from train.card import render_card
from train.config import ExportConfig, HistoryReasoning, ParityMode, Truncation, validate_export
from train.export_rollouts import SampleSource, Skipped, export_rollouts, trajectory_samples
from train.hub import push_to_hub
from train.parity import ParityReport
from train.preference import PreferenceFormat, export_preferences
from train.release import release_run
from train.rows import SampleWriter, val_tasks
from train.samples import Sample
from train.tokens import make_counter
from train.validate import validate_file

log = logging.getLogger(__name__)

BATCH = 1024  # accepted rollouts whose tasks and verdicts are read at once (a task file is in split order)


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
class TaskFacts:
    """What the card reads of an exported task (not the task: its instruction, checklist and attachments)."""

    source: str
    language: str
    licence: str | None
    origin: Origin  # what made the task, and its verdicts

    @classmethod
    def of(cls, task: Task, verdicts: Iterable[Verdict]) -> TaskFacts:
        licence = task.provenance.get("licence") or task.provenance.get("license")
        judged = reduce(operator.or_, (v.origin for v in verdicts), Origin())
        return cls(task.source, task.language, licence, task.origin | judged)


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
    tasks: dict[str, TaskFacts] = field(default_factory=dict)  # the exported ones (with a task record)
    parity: Optional[ParityReport] = None  # None: not checked (export.parity=false)

    def origin(self, exported: Exported) -> Origin:
        """What made a sample: its trajectory's, its task's and its verdicts' templates and models."""
        task = self.tasks.get(exported.sample.task_id)
        return exported.sample.origin | (task.origin if task else Origin())

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


def accepted_rollouts(run: RunReader, include_undecided: bool, report: ExportReport) -> Iterator[Rollout]:
    """The rollouts filters.acceptance accepts under the run's gates (and, if asked, the undecided ones), in task id
    order, as they are read; the others are counted by category."""
    gates = run_gates(run)
    if gates and not run.filtered():
        report.acceptance = (
            f"no verdicts.parquet: the gates ({', '.join(gates)}) have not run, so every finished rollout is undecided"
        )
    elif gates:
        report.acceptance = f"every configured gate passed: {', '.join(gates)}"
    else:
        report.acceptance = "no gates configured: every finished rollout is accepted (unfiltered)"
    if include_undecided:
        report.acceptance += "; undecided rollouts included (--include-undecided)"
    for rollout, outcome in judged(run):
        report.rollouts += 1
        if outcome.accepted or (include_undecided and outcome.category == UNDECIDED):
            report.accepted += 1
            yield rollout
        else:
            report.rejected[outcome.category] += 1


def training_rollouts(run: RunReader, cfg: ExportConfig, report: ExportReport) -> Iterator[Rollout]:
    """The accepted rollouts of training tasks (eval tasks are never trained on: reported skipped), `BATCH` at a
    time with their tasks and verdicts, whose facts the report keeps for the card."""
    counted = [ENVIRONMENT, *run_gates(run)]
    for batch in batched(accepted_rollouts(run, cfg.include_undecided, report), BATCH):
        ids = [r.task_id for r in batch]
        tasks, verdicts = run.tasks_of(ids), run.verdicts_of(ids, counted)
        for rollout in batch:
            task = tasks.get(rollout.task_id)
            if task is not None and task.split == "eval":
                report.skipped.append(Skipped(rollout.task_id, "-", "an eval task: never trained on", "eval_task"))
                continue
            if task is not None:
                report.tasks[rollout.task_id] = TaskFacts.of(task, verdicts.get(rollout.task_id, ()))
            yield rollout


def training_sources(run: RunReader, cfg: ExportConfig, report: ExportReport) -> Iterator[SampleSource]:
    """The samples of the accepted rollouts of training tasks, a rollout's at a time: what is read of one rollout is
    let go before the next."""
    for rollout in training_rollouts(run, cfg, report):
        yield from trajectory_samples(run, rollout, cfg, report.skipped)


def parity_inputs(run: RunReader, cfg: ExportConfig, every_trajectory: bool = False) -> Iterator[SampleSource]:
    """What train.parity checks: the samples the export makes of the run, or with `every_trajectory` the samples
    of every trajectory of every rollout, accepted, failed or unfinished (what the run's models were sent)."""
    report = ExportReport(run.path("sft"), "", "", cfg.max_length, cfg.mask_critic)
    if not every_trajectory:
        yield from training_sources(run, cfg, report)
        return
    for rollout in run.iter_rollouts():
        yield from trajectory_samples(run, rollout, cfg, report.skipped, finalized=False)


# ---------------------------------------------------------------- splitting and writing


def export_run(run: RunReader, cfg: ExportConfig) -> ExportReport:
    """Export the accepted trajectories of `run` to `cfg.out_dir` (default <run>/sft)."""
    validate_export(cfg)
    out_dir = Path(cfg.out_dir).resolve() if cfg.out_dir else run.path("sft")
    method = make_counter(cfg.model_dir, cfg.template, cfg.agent_template).method
    report = ExportReport(out_dir, method, "", cfg.max_length, cfg.mask_critic)
    exported: list[Exported] = []
    parity = ParityReport() if ParityMode(cfg.parity) is not ParityMode.off else None
    with SampleWriter(out_dir, run.path("rollouts"), cfg.link_images) as writer:
        for done in export_rollouts(run.root, cfg, training_rollouts(run, cfg, report)):
            report.skipped += done.skipped
            if parity is not None and done.parity is not None:
                parity.merge(done.parity)
            for sample, tokens, truncated in done.kept:
                writer.write(sample)
                exported.append(Exported(SampleFacts.of(sample), tokens, truncated))
        held_out = val_tasks(sorted({task_of(e.sample.task_id) for e in exported}), cfg.val_fraction, cfg.seed)
        writer.split(held_out)
    report.parity = parity
    report.train = [e for e in exported if task_of(e.sample.task_id) not in held_out]
    report.val = [e for e in exported if task_of(e.sample.task_id) in held_out]
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
    parser.add_argument(
        "--format",
        choices=["sft", *PreferenceFormat],
        default="sft",
        help="sft (accepted trajectories, default), kto (every decided trajectory with a label) or dpo (pairs where "
        "an accepted and a rejected rollout of a task part): train/preference.py",
    )
    parser.add_argument(
        "--release", action="store_true", help="write every trajectory, accepted or not, with its verdicts (train/release.py)"
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
    parser.add_argument(
        "--workers", type=int, default=defaults.workers, help="processes that make, check and fit samples (~1 GB each)"
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
    if args.release and args.run_dir is None:
        parser.error("--release needs RUN_DIR")
    return run_command(parser.prog, lambda: validate(args) if args.validate else release(args) if args.release else export(args))


def validate(args: argparse.Namespace) -> int:
    report = validate_file(args.validate, args.model_dir, args.template, args.agent_template)
    print(report.summary())
    return ExitCode.done if report.ok else ExitCode.failed


def release(args: argparse.Namespace) -> int:
    report = release_run(RunReader.open(args.run_dir), export_config(args), args.out)
    figures = report.figures()
    print(f"released {report.rows} trajectories of {report.rollouts} rollouts to {report.out_dir} ({report.shards} shards)")
    print(f"by outcome: {figures['by_outcome']}; by status: {figures['by_status']}; left out: {figures['unwritten'] or 'none'}")
    return ExitCode.done


def export_config(args: argparse.Namespace) -> ExportConfig:
    return ExportConfig(
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
        workers=args.workers,
    )


def preferences(args: argparse.Namespace) -> int:
    report = export_preferences(RunReader.open(args.run_dir), export_config(args), PreferenceFormat(args.format))
    figures = report.figures()
    print(f"wrote {figures['train_rows']} train / {figures['val_rows']} val {args.format} rows to {report.out_dir}")
    details = ("desirable", "undesirable") if report.format is PreferenceFormat.kto else ("pairs", "tasks", "no_pair")
    print(", ".join(f"{k}: {figures[k]}" for k in details) + f"; left out: {figures['skipped'] or 'nothing'}")
    if report.parity is not None:
        print(report.parity.summary())
    return ExitCode.done


def export(args: argparse.Namespace) -> int:
    if args.format != "sft":
        return preferences(args)
    report = export_run(RunReader.open(args.run_dir), export_config(args))
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
