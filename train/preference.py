"""Preference data from every attempt: KTO rows with a label, DPO pairs cut where two rollouts part
(`train.export RUN --format kto|dpo`).

KTO: every trajectory of every decided rollout of a training task becomes its samples (train/samples.py, exactly
as the SFT export makes them, parity-checked), each with `label`: true when the rollout was accepted, false when a
gate or the environment rejected it (an undecided rollout is left out and counted).

DPO: rollouts of one task (`rollouts.per_task` > 1) where one was accepted and another rejected give a pair per
agent: the two agents' conversations are walked together, and at the first agent turn where they differ the pair is
cut: the shared history, then the accepted rollout's turn (`messages`) against the rejected one's
(`rejected_messages`), each side the sample prefix its teacher was sent (parity-checked). MS-SWIFT's DPO trains
the last round of each side only, so the pair holds one parting turn, never the rest of either trajectory. Two
conversations that part at an observation (a tool answered differently) first, or differ in their tools, share no
history to cut at: no pair, counted. The signal is the run's acceptance (its gates), not a judge margin.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from core.cli import InputError
from core.iterate import batched
from core.protocols import TokenCounter
from core.records import Rollout, task_of
from core.run.reader import RunReader
from core.run.store import atomic_write_text
from filters.acceptance import UNDECIDED, judged
from train.config import ExportConfig, ParityMode
from train.export_rollouts import SampleSource, Skipped, export_rollouts, parity_refusal, source_row, trajectory_samples
from train.parity import Parity, ParityReport
from train.rows import SampleWriter, val_tasks
from train.samples import Sample, SwiftMessage
from train.tokens import make_counter

AGENT_ROLES = ("assistant", "tool_call")
BATCH = 512  # rollouts (KTO) or tasks (DPO) read at once


class PreferenceFormat(StrEnum):
    kto = "kto"
    dpo = "dpo"


@dataclass
class PreferenceReport:
    out_dir: Path
    format: PreferenceFormat
    rollouts: int = 0
    undecided: int = 0  # rollouts with no decision: left out
    eval_rollouts: int = 0  # rollouts of eval tasks: never trained on
    rows_train: int = 0
    rows_val: int = 0
    labels: Counter[bool] = field(default_factory=Counter)  # KTO: rows by label
    tasks: int = 0  # DPO: training tasks with a decided rollout
    pairs_by_task: Counter[str] = field(default_factory=Counter)  # DPO: task -> pairs
    no_pair: Counter[str] = field(default_factory=Counter)  # DPO: why a task, or an agent of a couple, gave none
    skipped: list[Skipped] = field(default_factory=list)
    parity: Optional[ParityReport] = None

    def figures(self) -> dict[str, Any]:
        figures: dict[str, Any] = {
            "format": str(self.format),
            "rollouts": self.rollouts,
            "undecided": self.undecided,
            "eval_rollouts": self.eval_rollouts,
            "train_rows": self.rows_train,
            "val_rows": self.rows_val,
            "skipped": dict(Counter(s.kind for s in self.skipped)),
            "parity": self.parity.to_json() if self.parity is not None else None,
        }
        if self.format is PreferenceFormat.kto:
            return figures | {"desirable": self.labels[True], "undesirable": self.labels[False]}
        pairs = sum(self.pairs_by_task.values())
        return figures | {
            "tasks": self.tasks,
            "pairs": pairs,
            "tasks_with_pairs": len(self.pairs_by_task),
            "pairs_per_task": round(pairs / self.tasks, 3) if self.tasks else 0.0,
            "no_pair": dict(self.no_pair),
        }


# ---------------------------------------------------------------- DPO: where two conversations part


def _same(a: SwiftMessage, b: SwiftMessage) -> bool:
    return a.to_dict() == b.to_dict() and a.images == b.images


def _turn_end(sample: Sample, start: int) -> int:
    end = start
    while end < len(sample.messages) and sample.messages[end].role in AGENT_ROLES:
        end += 1
    return end


def parting(chosen: list[Sample], rejected: list[Sample]) -> tuple[Sample, Sample] | str:
    """The two samples cut after the first agent turn where they differ (their history equal), else why there is
    none. Parts are walked in order: a part both share whole is history."""
    for a, b in zip(chosen, rejected):
        n = min(len(a.messages), len(b.messages))
        at = next((i for i in range(n) if not _same(a.messages[i], b.messages[i])), n)
        if at == len(a.messages) == len(b.messages):
            continue
        if at == n:
            return "one conversation is the other's beginning"
        if a.tools_json != b.tools_json:
            return "their tools differ"
        if a.messages[at].role not in AGENT_ROLES or b.messages[at].role not in AGENT_ROLES:
            return "they part at an observation, not at an agent turn"
        while at > 0 and a.messages[at - 1].role in AGENT_ROLES:  # back to the start of the agent turn
            at -= 1
        ends = _turn_end(a, at), _turn_end(b, at)
        if any(m.loss is False or m.critic for s, end in zip((a, b), ends) for m in s.messages[at:end]):
            return "they part at a turn not trained on (a critic's or a malformed call)"
        return a.prefix(ends[0]), b.prefix(ends[1])
    return "identical conversations"


def pair_row(chosen: Sample, rejected: Sample, writer: SampleWriter) -> dict[str, Any]:
    """The DPO row: the chosen side as `messages`, the rejected side's whole sequence as `rejected_*` (MS-SWIFT does
    not take `rejected_images` or `rejected_tools` from the chosen side once `rejected_messages` is given)."""
    row = chosen.to_swift(partial(writer.images.place, chosen.task_id))
    other = rejected.to_swift(partial(writer.images.place, rejected.task_id))
    return row | {
        "task_id": task_of(chosen.task_id),
        "chosen_rollout": chosen.task_id,
        "rejected_rollout": rejected.task_id,
        "rejected_messages": other["messages"],
        "rejected_images": other["images"],
        "rejected_tools": other["tools"],
    }


# ---------------------------------------------------------------- reading the run


def decided(run: RunReader, report: PreferenceReport) -> Iterator[tuple[Rollout, bool]]:
    """Each decided rollout of a training task with whether it was accepted, in key order; the rest counted."""
    for batch in batched(judged(run), BATCH):
        tasks = run.tasks_of(r.task_id for r, _ in batch)
        for rollout, fate in batch:
            report.rollouts += 1
            task = tasks.get(rollout.task_id)
            if fate.category == UNDECIDED:
                report.undecided += 1
            elif task is not None and task.split == "eval":
                report.eval_rollouts += 1
            else:
                yield rollout, fate.accepted


def decided_keys(run: RunReader, report: PreferenceReport) -> dict[str, list[tuple[str, bool]]]:
    """Each training task's decided rollout keys with whether each was accepted (keys only: held for the run).
    InputError when the run has no rejected rollout at all."""
    keys: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for rollout, accepted in decided(run, report):
        keys[task_of(rollout.task_id)].append((rollout.task_id, accepted))
    if not any(not accepted for members in keys.values() for _, accepted in members):
        raise InputError(
            f"{run.root}: no rejected rollout of a training task ({report.rollouts} rollouts, {report.undecided} undecided): "
            "a DPO pair needs an accepted and a rejected rollout of the same task (rollouts.per_task > 1)"
        )
    report.tasks = len(keys)
    return keys


def task_groups(run: RunReader, keys: dict[str, list[tuple[str, bool]]]) -> Iterator[tuple[str, list[Rollout], list[Rollout]]]:
    """Each task's accepted and rejected rollouts, the records read `BATCH` tasks at a time."""
    for tasks in batched(sorted(keys), BATCH):
        records = run.rollouts_of(key for task in tasks for key, _ in keys[task])
        for task in tasks:
            members = keys[task]
            yield (
                task,
                [records[k] for k, accepted in members if accepted and k in records],
                [records[k] for k, accepted in members if not accepted and k in records],
            )


# ---------------------------------------------------------------- writing


class PreferenceExport:
    """One format's rows written, checked and fitted as the SFT export's are."""

    def __init__(self, run: RunReader, cfg: ExportConfig, fmt: PreferenceFormat):
        self.run, self.cfg = run, cfg
        out_dir = Path(cfg.out_dir).resolve() if cfg.out_dir else run.path(str(fmt))
        self.report = PreferenceReport(out_dir, fmt)
        self.writer: SampleWriter  # opened once the input is known good: a refused export leaves an earlier one whole
        self.tasks: set[str] = set()

    def kto(self) -> None:
        labels: deque[bool] = deque()

        def rollouts() -> Iterator[Rollout]:
            for rollout, accepted in decided(self.run, self.report):
                labels.append(accepted)
                yield rollout

        parity = ParityReport() if ParityMode(self.cfg.parity) is not ParityMode.off else None
        for done in export_rollouts(self.run.root, self.cfg, rollouts(), finalized=False):
            label = labels.popleft()
            self.report.skipped += done.skipped
            if parity is not None and done.parity is not None:
                parity.merge(done.parity)
            for sample, _, _ in done.kept:
                self.writer.write_row(sample.to_swift(partial(self.writer.images.place, sample.task_id)) | {"label": label})
                self.report.labels[label] += 1
                self.tasks.add(task_of(sample.task_id))
        self.report.parity = parity

    def dpo(self, keys: dict[str, list[tuple[str, bool]]]) -> None:
        counter = make_counter(self.cfg.model_dir, self.cfg.template, self.cfg.agent_template)
        mode = ParityMode(self.cfg.parity)
        checker = Parity(self.cfg) if mode is not ParityMode.off else None
        skipped = self.report.skipped
        for task, accepted, rejected in task_groups(self.run, keys):
            if not accepted or not rejected:
                self.report.no_pair["no accepted rollout" if not accepted else "no rejected rollout"] += 1
                continue
            refusals = [self._by_agent(trajectory_samples(self.run, bad, self.cfg, skipped, finalized=False)) for bad in rejected]
            for good in accepted:
                chosen = self._by_agent(trajectory_samples(self.run, good, self.cfg, skipped))
                for refused in refusals:
                    for agent in sorted(chosen.keys() & refused.keys()):
                        self._pair(task, chosen[agent], refused[agent], counter, checker, mode)
        self.report.parity = checker.report if checker is not None else None

    @staticmethod
    def _by_agent(sources: Iterable[SampleSource]) -> dict[str, list[SampleSource]]:
        found: dict[str, list[SampleSource]] = defaultdict(list)
        for source in sources:
            found[source.sample.agent].append(source)
        return found

    def _pair(
        self,
        task: str,
        chosen: list[SampleSource],
        rejected: list[SampleSource],
        counter: TokenCounter,
        checker: Optional[Parity],
        mode: ParityMode,
    ) -> None:
        cut = parting([s.sample for s in chosen], [s.sample for s in rejected])
        if isinstance(cut, str):
            self.report.no_pair[cut] += 1
            return
        for side, source in zip(cut, (chosen[0], rejected[0])):
            refused = parity_refusal(checker, mode, side, source)
            if refused is not None:
                self.report.skipped.append(refused)
                return
            if counter.count(source_row(side)).total > self.cfg.max_length:
                self.report.skipped.append(
                    Skipped(side.task_id, side.agent, f"over max_length {self.cfg.max_length}", "too_long")
                )
                return
        self.writer.write_row(pair_row(cut[0], cut[1], self.writer))
        self.report.pairs_by_task[task] += 1
        self.tasks.add(task)

    def finish(self) -> PreferenceReport:
        held_out = val_tasks(sorted(self.tasks), self.cfg.val_fraction, self.cfg.seed)
        self.report.rows_train, self.report.rows_val = self.writer.split(held_out)
        report = self.report
        atomic_write_text(report.out_dir / "README.md", preference_card(report, self.run))
        self.run.path("stats").mkdir(exist_ok=True)
        figures = report.figures() | {"out_dir": str(report.out_dir)}
        atomic_write_text(self.run.path("stats", f"{report.format}.json"), json.dumps(figures, indent=1))
        return report


def export_preferences(run: RunReader, cfg: ExportConfig, fmt: PreferenceFormat) -> PreferenceReport:
    """Write `fmt` rows of `run` to `cfg.out_dir` (default <run>/kto or <run>/dpo)."""
    export = PreferenceExport(run, cfg, fmt)
    keys = decided_keys(run, export.report) if fmt is PreferenceFormat.dpo else {}  # a run with no rejected rollout stops
    with SampleWriter(export.report.out_dir, run.path("rollouts"), cfg.link_images) as export.writer:
        export.kto() if fmt is PreferenceFormat.kto else export.dpo(keys)
        return export.finish()


def preference_card(report: PreferenceReport, run: RunReader) -> str:
    figures = report.figures()
    lines = [f"# {report.format.upper()} data of run {run.root.name}", ""]
    lines.append(f"{figures['train_rows']} train / {figures['val_rows']} val rows (val: whole tasks held out).")
    if report.format is PreferenceFormat.kto:
        lines.append(
            f"Labels: {figures['desirable']} desirable (accepted), {figures['undesirable']} undesirable (rejected); "
            f"{report.undecided} undecided rollouts left out. Train with `python -m train.sft train.method=kto`."
        )
    else:
        lines.append(
            f"{figures['pairs']} pairs from {figures['tasks_with_pairs']} of {report.tasks} training tasks "
            f"({figures['pairs_per_task']} per task): an accepted and a rejected rollout of a task, cut at the first "
            "agent turn where they part. Train with `python -m train.sft train.method=dpo`."
        )
        lines += ["", "| no pair, because | count |", "|---|---:|"]
        lines += [f"| {why} | {n} |" for why, n in report.no_pair.most_common()]
    if report.parity is not None:
        lines += ["", "Parity: " + report.parity.summary().splitlines()[0]]
    lines += ["", f"Left out: {figures['skipped'] or 'nothing'}; eval-task rollouts: {report.eval_rollouts}."]
    return "\n".join(lines) + "\n"
