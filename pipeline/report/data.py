"""What a report reads from a run directory (through its RunReader): records, config, stage figures and export counts.

Every part is optional except the directory itself: a run stopped after its tasks, or
whose filters or export never ran, still gets a report that says what is missing.
Units (`units/<stage>/*.json`) are read when present, so a run still in progress is
reported as far as it got; the compacted Parquet view is the fallback. Records are streamed
(`read_rollouts`): a report of 10,000 rollouts holds one batch of them, and one row each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from core.iterate import batched
from core.records import ArtifactError, Rollout, StageDone, Task, Verdict
from core.run.ledger import Ledger
from core.run.reader import RunReader
from core.seams.deck import DeckPptx, DeckReport, DeckSlide
from filters.acceptance import ENVIRONMENT, run_gates
from pipeline.spending import PROJECTION, USAGE, sft_tokens

SFT_SPLITS = ("train", "val")
BATCH = 2048  # rollouts read at once, with their tasks (a task file is in split order: each read decodes most of it)


@dataclass(frozen=True)
class RunData:
    reader: RunReader
    root: Path
    config: dict[str, Any]
    config_text: str
    config_hash: str
    filtered: bool  # whether the filters have run
    gates: list[str]
    stages: dict[str, dict[str, Any]]  # each stage's own figures (StageDone records, stats/<stage>.json)
    sft_samples: dict[str, int] | None  # split -> samples; None: no export yet
    ledger: Ledger  # every model call of every stage (core.run.ledger)
    sft_tokens: int | None  # tokens of the exported samples; None: no export yet
    projection: dict[str, Any] | None  # the rollouts stage's projected cost (stats/projection.json), when it was made

    def workspace(self, rollout: Rollout) -> str:
        """The rollout's workspace, run-relative."""
        return self.reader.workspace(rollout).relative_to(self.root).as_posix()


def load_run(run: RunReader) -> RunData:
    """The run's own files and figures; its records are read by `read_rollouts`, a batch at a time."""
    return RunData(
        reader=run,
        root=run.root,
        config=run.config(),
        config_text=run.config_text(),
        config_hash=run.config_hash(),
        filtered=run.filtered(),
        gates=run_gates(run),
        stages=_stage_figures(run),
        sft_samples=_sft_samples(run.path("sft")),
        ledger=run.ledger(),
        sft_tokens=sft_tokens(run.root),
        projection=_json(run.path(*PROJECTION)),
    )


@dataclass(frozen=True)
class RolloutRead:
    """One rollout with what the report shows of it."""

    rollout: Rollout
    task: Task | None  # None: not in tasks/*.parquet
    slides: list[DeckSlide]  # the deck's slides (its previews when it recorded no deck_defects.json)
    pptx: DeckPptx | None  # its PPTX's mode and fidelity figures, when the deck records them
    verdicts: list[Verdict]  # by the counted gates (environment, then the run's)


def read_rollouts(run: RunData) -> Iterator[RolloutRead]:
    """The run's rollouts in task id order with their tasks, decks and verdicts, read `BATCH` at a time: memory
    does not grow with the run."""
    reader = run.reader
    for batch in batched(reader.iter_rollouts(), BATCH):
        ids = [r.task_id for r in batch]
        tasks = reader.tasks_of(ids)
        verdicts = reader.verdicts_of(ids, [ENVIRONMENT, *run.gates]) if run.filtered else {}
        for rollout in batch:
            deck = read_deck(reader, rollout)
            yield RolloutRead(
                rollout,
                tasks.get(rollout.task_id),
                list(deck.slides) if deck else previews(reader, rollout),
                deck.pptx if deck else None,
                verdicts.get(rollout.task_id, []),
            )


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None


def _stage_figures(run: RunReader) -> dict[str, dict[str, Any]]:
    """Each stage's own figures: its StageDone record (units/stages), then its stats/<stage>.json."""
    found = {name: json.loads(done.figures_json) for name, done in run.units("stages", StageDone).items()}
    for path in sorted(
        p for p in run.path("stats").glob("*.json") if p.name not in (USAGE[-1], PROJECTION[-1])
    ):  # the cost section's
        try:
            found[path.stem] = found.get(path.stem, {}) | json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            found[path.stem] = {"unreadable": f"{path.name}: {exc}"}
    return found


def _sft_samples(folder: Path) -> dict[str, int] | None:
    files = {split: folder / f"{split}.jsonl" for split in SFT_SPLITS}
    if not any(f.is_file() for f in files.values()):
        return None
    return {split: _lines(f) if f.is_file() else 0 for split, f in files.items()}


def _lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def read_deck(run: RunReader, rollout: Rollout) -> DeckReport | None:
    """What the deck export measured, None when the rollout recorded none or it cannot be read."""
    try:
        return run.deck(rollout)
    except ArtifactError:
        return None


def previews(run: RunReader, rollout: Rollout) -> list[DeckSlide]:
    """The slides of a deck with no readable deck_defects.json: its PNGs in previews/ (no defects known)."""
    folder = run.workspace(rollout)
    return [DeckSlide("", p.relative_to(folder).as_posix()) for p in sorted((folder / "previews").glob("*.png"))]
