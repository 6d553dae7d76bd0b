"""The one reader of a run directory: records in, records out.

Every stage, command, the run report, eval and the parity check read a run through a `RunReader`: its config,
its tasks, rollouts and verdicts as records (a stage's published units while it runs, else its Parquet view),
and, given a rollout, the records its artifacts hold: each agent's `Trajectory`, the deck's `DeckReport` and
text, from its packed record (`rollout.json.gz`, core.run.packed) or, for a rollout not packed, its loose files.
An artifact that is missing or unreadable is an `ArtifactError` naming the file and what is wrong; the caller
decides what that means (an environment verdict, a skipped sample, a note in the report).

A reader reads each part once, when first asked: a stage that needs the rollouts twice reads them once. Make a
new reader to see what was written since. The writer is `core.run.store.RunStore`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import orjson
import yaml

from core.cli import InputError
from core.codec import RecordError, decode
from core.records import (
    ArtifactError,
    Origin,
    Record,
    Rollout,
    StageDone,
    Task,
    Trajectory,
    Verdict,
    iter_parquet,
    read_parquet,
    readable_parquet,
    task_of,
    verdict_unit,
)
from core.run.keyed import KeyedRows
from core.run.ledger import Ledger, read_ledger
from core.run.packed import RECORD, PackedRollout
from core.run.store import RunStore
from core.seams.deck import DeckReport

R = TypeVar("R", bound=Record)
T = TypeVar("T")

TRAJECTORY = "trajectory:"  # Rollout.artifacts names each agent's trajectory "trajectory:<agent>"
TRAJECTORY_FILE = "trajectory_{agent}.json"  # in the rollout's workspace, saved as the agent goes (agents/workflow.py)
PACKED = "record"  # Rollout.artifacts names a packed rollout's record (core.run.packed) so
DECK_TEXT = "deck_text"  # and an unpacked one's deck_text.json so
SPLITS = ("train", "eval")


class NotARun(InputError):
    """The directory is not a run directory (no config.yaml, tasks/ or units/)."""


@dataclass(frozen=True)
class TrajectoryFile:
    """One agent's trajectory artifact of a rollout."""

    task_id: str
    agent: str
    path: Path  # absolute

    @property
    def workspace(self) -> Path:
        return self.path.parent


class RunReader:
    """A run directory, read. `RunReader.open(root)` checks that it is one (NotARun otherwise)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.store = RunStore(self.root)
        self._read: dict[str, Any] = {}
        self._packed: tuple[Path, PackedRollout] | None = None  # the last record read: its agents are read in turn

    @classmethod
    def open(cls, root: Path) -> RunReader:
        reader = cls(root)
        if not any((reader.root / name).exists() for name in ("config.yaml", "tasks", "units")):
            raise NotARun(f"{reader.root} is not a run directory (no config.yaml, tasks/ or units/)")
        return reader

    def _once(self, key: str, read: Callable[[], T]) -> T:
        if key not in self._read:
            self._read[key] = read()
        value: T = self._read[key]  # what `read` returned: each key is read by one method, always of one type
        return value

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    # ---- the run's own files

    def config_text(self) -> str:
        """config.yaml as written ("" when the run has none)."""
        path = self.path("config.yaml")
        return self._once("config_text", lambda: path.read_text(encoding="utf-8") if path.is_file() else "")

    def config(self) -> dict[str, Any]:
        """The resolved config the run was made with ({} when it has none)."""
        return self._once("config", lambda: yaml.safe_load(self.config_text()) or {})

    def config_hash(self) -> str:
        path = self.path("config.hash")
        return path.read_text().strip() if path.is_file() else ""

    def split(self, name: str) -> list[Task]:
        """The tasks of one split (tasks/<name>.parquet), in file order; [] when there is none."""
        path = self.path("tasks", f"{name}.parquet")
        return self._once(f"split:{name}", lambda: read_parquet(path, Task) if path.is_file() else [])

    def tasks(self) -> dict[str, Task]:
        """Every task of every split (tasks/*.parquet), by id."""

        def read() -> dict[str, Task]:
            names = sorted(p.stem for p in self.path("tasks").glob("*.parquet"))
            return {t.task_id: t for name in names for t in self.split(name)}

        return self._once("tasks", read)

    def rollouts(self) -> list[Rollout]:
        """The finished rollouts: the published units (the truth while the stage runs), else rollouts.parquet."""
        return self._once("rollouts", lambda: self._records("rollouts", Rollout))

    def verdicts(self) -> list[Verdict] | None:
        """Every gate's verdicts; None when the filters have not run."""
        return self._once("verdicts", lambda: self._records("verdicts", Verdict) if self.filtered() else None)

    def filtered(self) -> bool:
        """Whether the filters have written verdicts."""
        return self._once("filtered", lambda: self.store.any_done("verdicts") or self.path("verdicts.parquet").is_file())

    # ---- the same records streamed: a stage reads a run of any size in bounded batches, keeping nothing

    def iter_rollouts(self) -> Iterator[Rollout]:
        """The finished rollouts one at a time, in task id order (what `rollouts()` holds, without holding it)."""
        return self._iter_records("rollouts", Rollout)

    def iter_verdicts(self) -> Iterator[Verdict]:
        """Every gate's verdicts one at a time (none when the filters have not run)."""
        return self._iter_records("verdicts", Verdict)

    def iter_tasks(self) -> Iterator[Task]:
        """Every task of every split, split by split."""
        for path in sorted(self.path("tasks").glob("*.parquet")):
            yield from iter_parquet(path, Task)

    def task_ids(self) -> set[str]:
        return set(self._task_rows())

    def tasks_of(self, keys: Iterable[str]) -> dict[str, Task]:
        """The tasks of rollout keys (`core.records.rollout_id`) the run holds (any split), decoding only the row groups
        that hold them; each as played: keyed, and with its `task_id`, as the rollout's key (a task's `<id>~k` rollout
        gets the task as `<id>~k`)."""
        keys = list(keys)
        rows = self._task_rows().fetch({task_of(key) for key in keys})
        return {key: replace(Task.from_dict(rows[task_of(key)]), task_id=key) for key in keys if task_of(key) in rows}

    def rollouts_of(self, keys: Iterable[str]) -> dict[str, Rollout]:
        """Those of the rollouts `keys` names that finished, by key."""
        if self.store.any_done("rollouts"):
            return self.store.units_of("rollouts", keys, Rollout)
        wanted = set(keys)  # only the compacted view (a run copied without its units)
        return {r.task_id: r for r in self.rollouts() if r.task_id in wanted}

    def verdicts_of(self, task_ids: Iterable[str], gates: Sequence[str]) -> dict[str, list[Verdict]]:
        """The verdicts of `task_ids` by `gates`, by task id (the tasks none judged are left out)."""
        found: dict[str, list[Verdict]] = defaultdict(list)
        if self.store.any_done("verdicts"):
            units = [verdict_unit(task_id, gate) for task_id in task_ids for gate in gates]
            verdicts: Iterable[Verdict] = self.store.units_of("verdicts", units, Verdict).values()
        else:  # only the compacted view (a run copied without its units)
            wanted = set(task_ids)
            verdicts = (v for v in self.verdicts() or () if v.task_id in wanted and v.gate in gates)
        for verdict in verdicts:
            found[verdict.task_id].append(verdict)
        return dict(found)

    def _task_rows(self) -> KeyedRows:
        def index() -> KeyedRows:
            files = sorted(self.path("tasks").glob("*.parquet"))
            for path in files:
                readable_parquet(path)  # RecordError before a row is read
            return KeyedRows(files, "task_id")

        return self._once("task_rows", index)

    def _iter_records(self, stage: str, cls: type[R]) -> Iterator[R]:
        if self.store.any_done(stage):
            yield from (record for _, record in self.store.iter_units(stage, cls))
        elif self.path(f"{stage}.parquet").is_file():
            yield from iter_parquet(self.path(f"{stage}.parquet"), cls)

    def units(self, stage: str, cls: type[R]) -> dict[str, R]:
        """The published units of a stage by id (eval's scores and checks, StageDone marks)."""
        return self._once(f"units:{stage}", lambda: self.store.load_map(stage, cls))

    def stage_done(self, stage: str) -> StageDone | None:
        return self.units("stages", StageDone).get(stage)

    def ledger(self) -> Ledger:
        """Every model call of every stage (core.run.ledger)."""
        return self._once("ledger", lambda: read_ledger(self.root))

    def _records(self, stage: str, cls: type[R]) -> list[R]:
        if self.store.done(stage):
            return self.store.load(stage, cls)
        path = self.path(f"{stage}.parquet")
        return read_parquet(path, cls) if path.is_file() else []

    # ---- the records a rollout's artifacts hold

    def workspace(self, rollout: Rollout) -> Path:
        """The rollout's workspace (rollouts/<task_id> unless its artifacts say otherwise)."""
        named = sorted((name, p) for name, p in rollout.artifacts.items() if name == PACKED or name.startswith(TRAJECTORY))
        some = named[0][1] if named else None
        return self.root / (some.rsplit("/", 1)[0] if some and "/" in some else f"rollouts/{rollout.task_id}")

    def artifact(self, rollout: Rollout, name: str) -> Path:
        """The artifact's absolute path; ArtifactError when the rollout did not record it."""
        relative = rollout.artifacts.get(name)
        if relative is None:
            raise ArtifactError(f"{rollout.task_id}: the rollout recorded no {name!r} artifact")
        return self.root / relative

    def trajectory_files(self, rollout: Rollout) -> list[TrajectoryFile]:
        """Each agent's trajectory artifact, by agent name (for a packed rollout: its record, once per agent). A
        rollout whose record names none (a worker that died mid-rollout) has the trajectory files its agents saved
        in its workspace, if any."""
        if PACKED in rollout.artifacts:
            record = self.artifact(rollout, PACKED)
            return [TrajectoryFile(rollout.task_id, t.agent, record) for t in self.packed(record).trajectories]
        named = [
            TrajectoryFile(rollout.task_id, name.removeprefix(TRAJECTORY), self.root / relative)
            for name, relative in sorted(rollout.artifacts.items())
            if name.startswith(TRAJECTORY)
        ]
        if named:
            return named
        prefix, suffix = TRAJECTORY_FILE.split("{agent}")
        saved = sorted(self.workspace(rollout).glob(TRAJECTORY_FILE.format(agent="*")))
        return [TrajectoryFile(rollout.task_id, p.name.removeprefix(prefix).removesuffix(suffix), p) for p in saved]

    def packed(self, path: Path) -> PackedRollout:
        """A packed rollout's record (the last one read is kept); ArtifactError when missing or malformed."""
        if self._packed is None or self._packed[0] != path:
            self._packed = (path, PackedRollout.read(path))
        return self._packed[1]

    def trajectory(self, file: TrajectoryFile) -> Trajectory:
        """The trajectory record in `file`; ArtifactError when it is missing or not a trajectory."""
        if file.path.name == RECORD:
            found = [t for t in self.packed(file.path).trajectories if t.agent == file.agent]
            if not found:
                raise ArtifactError(f"{file.path}: no {file.agent} trajectory")
            return found[0]
        data = json_artifact(file.path)
        try:
            return Trajectory.from_dict(data)
        except (RecordError, TypeError) as exc:
            raise ArtifactError(f"{file.path}: not a trajectory record ({exc})") from exc

    def trajectories(self, rollout: Rollout) -> list[Trajectory]:
        """Every agent's trajectory, in artifact order; ArtifactError when there is none or one is unreadable."""
        files = self.trajectory_files(rollout)
        if not files:
            raise ArtifactError(f"{rollout.task_id}: the rollout recorded no trajectory")
        return [self.trajectory(f) for f in files]

    def trajectory_origin(self, file: TrajectoryFile) -> Origin:
        """Only the `origin` of a trajectory (a file made before records named theirs: none); RecordError when unreadable."""
        if file.path.name == RECORD:
            try:
                return self.trajectory(file).origin
            except ArtifactError as exc:
                raise RecordError(str(exc)) from exc
        try:
            return decode(Origin, orjson.loads(file.path.read_bytes()).get("origin") or {})
        except (OSError, orjson.JSONDecodeError, AttributeError, RecordError) as exc:
            raise RecordError(f"{file.path}: unreadable trajectory ({exc})") from exc

    def deck(self, rollout: Rollout) -> DeckReport:
        """What the deck export measured (deck_defects.json); ArtifactError when missing or malformed."""
        if PACKED in rollout.artifacts:
            deck = self.packed(self.artifact(rollout, PACKED)).deck
            if deck is None:
                raise ArtifactError(f"{rollout.task_id}: the rollout recorded no deck")
            return deck
        return DeckReport.read(self.artifact(rollout, "defects"))

    def deck_text(self, rollout: Rollout) -> Any:
        """The deck's text as the export read it (deck_text.json, deck/text.py); None when it wrote none."""
        if PACKED in rollout.artifacts:
            return self.packed(self.artifact(rollout, PACKED)).deck_text
        return json_artifact(self.artifact(rollout, DECK_TEXT)) if DECK_TEXT in rollout.artifacts else None


def json_artifact(path: Path) -> Any:
    """A JSON artifact's content; ArtifactError naming the file when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: unreadable ({exc})") from exc
