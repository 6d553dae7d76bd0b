"""What a report reads from a run directory (through its RunReader): records, config, stage figures and export counts.

Every part is optional except the directory itself: a run stopped after its tasks, or
whose filters or export never ran, still gets a report that says what is missing.
Units (`units/<stage>/*.json`) are read when present, so a run still in progress is
reported as far as it got; the compacted Parquet view is the fallback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.records import ArtifactError, Rollout, StageDone, Task, Verdict
from core.run.ledger import Ledger
from core.run.reader import RunReader
from core.seams.deck import DeckPptx, DeckReport, DeckSlide
from filters.acceptance import run_gates
from pipeline.spending import PROJECTION, USAGE, sft_tokens

SFT_SPLITS = ("train", "val")


@dataclass(frozen=True)
class RunData:
    reader: RunReader
    root: Path
    config: dict[str, Any]
    config_text: str
    config_hash: str
    tasks: dict[str, Task]  # every split
    rollouts: list[Rollout]
    decks: dict[str, list[DeckSlide]]  # task_id -> the final slides (what exists of them)
    pptx: dict[str, DeckPptx]  # task_id -> its PPTX's mode and fidelity figures (decks that record them)
    verdicts: list[Verdict] | None  # None: the filters have not run
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
    rollouts = run.rollouts()
    reports = {r.task_id: read_deck(run, r) for r in rollouts}
    return RunData(
        reader=run,
        root=run.root,
        config=run.config(),
        config_text=run.config_text(),
        config_hash=run.config_hash(),
        tasks=run.tasks(),
        rollouts=rollouts,
        decks={r.task_id: list(deck.slides) if (deck := reports[r.task_id]) else previews(run, r) for r in rollouts},
        pptx={task_id: deck.pptx for task_id, deck in reports.items() if deck is not None and deck.pptx is not None},
        verdicts=run.verdicts(),
        gates=run_gates(run),
        stages=_stage_figures(run),
        sft_samples=_sft_samples(run.path("sft")),
        ledger=run.ledger(),
        sft_tokens=sft_tokens(run.root),
        projection=_json(run.path(*PROJECTION)),
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
