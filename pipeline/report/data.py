"""What a report reads from a run directory: records, config, stage figures and export counts.

Every part is optional except the directory itself: a run stopped after its tasks, or
whose filters or export never ran, still gets a report that says what is missing.
Units (`units/<stage>/*.json`) are read when present, so a run still in progress is
reported as far as it got; the compacted Parquet view is the fallback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from core.ledger import Ledger, read_ledger
from core.records import Record, Rollout, StageDone, Task, Verdict, read_parquet
from core.store import RunStore
from filters.acceptance import configured_gates
from pipeline.spending import PROJECTION, USAGE, sft_tokens

R = TypeVar("R", bound=Record)
SFT_SPLITS = ("train", "val")


class NotARun(FileNotFoundError):
    """The directory is not a run directory (no config.yaml, tasks, or rollouts)."""


@dataclass(frozen=True)
class DeckSlide:
    png: str  # workspace-relative
    file: str
    defects: tuple[dict[str, Any], ...]
    pptx: dict[str, Any] | None = None  # the PPTX fidelity check's figures for this slide, when it ran


@dataclass(frozen=True)
class DeckPptx:
    mode: str  # editable | picture
    fidelity: dict[str, Any] | None  # the deck's figures (or {"error": ...}), when the check ran


@dataclass(frozen=True)
class RunData:
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
    ledger: Ledger  # every model call of every stage (core.ledger)
    sft_tokens: int | None  # tokens of the exported samples; None: no export yet
    projection: dict[str, Any] | None  # the rollouts stage's projected cost (stats/projection.json), when it was made


def check_run(root: Path) -> None:
    if not any((root / name).exists() for name in ("config.yaml", "tasks", "units")):
        raise NotARun(f"{root} is not a run directory (no config.yaml, tasks/ or units/)")


def load_run(root: Path) -> RunData:
    root = Path(root).resolve()
    check_run(root)
    store = RunStore(root)
    config_file = root / "config.yaml"
    config_text = config_file.read_text(encoding="utf-8") if config_file.is_file() else ""
    config = yaml.safe_load(config_text) or {}
    hash_file = root / "config.hash"
    verdicts_present = (root / "units" / "verdicts").is_dir() or (root / "verdicts.parquet").is_file()
    rollouts = stage_records(store, "rollouts", "rollouts.parquet", Rollout)
    return RunData(
        root=root,
        config=config,
        config_text=config_text,
        config_hash=hash_file.read_text().strip() if hash_file.is_file() else "",
        tasks={t.task_id: t for split in sorted((root / "tasks").glob("*.parquet")) for t in read_parquet(split, Task)},
        rollouts=rollouts,
        decks={r.task_id: read_deck(root, r) for r in rollouts},
        pptx={r.task_id: pptx for r in rollouts if (pptx := read_pptx(root, r)) is not None},
        verdicts=stage_records(store, "verdicts", "verdicts.parquet", Verdict) if verdicts_present else None,
        gates=configured_gates(config),
        stages=_stage_figures(store),
        sft_samples=_sft_samples(root / "sft"),
        ledger=read_ledger(root),
        sft_tokens=sft_tokens(root),
        projection=_json(root.joinpath(*PROJECTION)),
    )


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None


def stage_records(store: RunStore, stage: str, parquet: str, cls: type[R]) -> list[R]:
    """The finished units of `stage` (the truth while a stage runs), else its Parquet view, else none."""
    if store.done(stage):
        return store.load(stage, cls)
    path = store.path(parquet)
    return read_parquet(path, cls) if path.is_file() else []


def _stage_figures(store: RunStore) -> dict[str, dict[str, Any]]:
    """Each stage's own figures: its StageDone record (units/stages), then its stats/<stage>.json."""
    found = {name: json.loads(done.figures_json) for name, done in store.load_map("stages", StageDone).items()}
    for path in sorted(
        p for p in store.path("stats").glob("*.json") if p.name not in (USAGE[-1], PROJECTION[-1])
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


def workspace(rollout: Rollout) -> str:
    """The rollout's workspace, run-relative (rollouts/<task_id> unless its artifacts say otherwise)."""
    some = next((p for name, p in sorted(rollout.artifacts.items()) if name.startswith("trajectory:")), None)
    return some.rsplit("/", 1)[0] if some and "/" in some else f"rollouts/{rollout.task_id}"


def _deck_defects(root: Path, rollout: Rollout) -> dict[str, Any] | None:
    defects = rollout.artifacts.get("defects")
    try:
        data = json.loads((root / defects).read_text(encoding="utf-8")) if defects else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def read_deck(root: Path, rollout: Rollout) -> list[DeckSlide]:
    """The final slides: deck_defects.json when readable, else the PNGs in previews/ (no defects known)."""
    folder = root / workspace(rollout)
    data = _deck_defects(root, rollout)
    if data is not None and isinstance(data.get("slides"), list):
        return [
            DeckSlide(
                str(s.get("png", "")),
                str(s.get("file", "")),
                tuple(d for d in s.get("defects") or () if isinstance(d, dict)),
                s["pptx"] if isinstance(s.get("pptx"), dict) else None,
            )
            for s in data["slides"]
            if isinstance(s, dict)
        ]
    return [DeckSlide(p.relative_to(folder).as_posix(), "", ()) for p in sorted((folder / "previews").glob("*.png"))]


def read_pptx(root: Path, rollout: Rollout) -> DeckPptx | None:
    """What deck_defects.json says of the deck's PPTX (decks exported before it did: None)."""
    data = _deck_defects(root, rollout)
    pptx = data.get("pptx") if data else None
    if not isinstance(pptx, dict):
        return None
    fidelity = pptx.get("fidelity")
    return DeckPptx(str(pptx.get("mode", "")), fidelity if isinstance(fidelity, dict) else None)
