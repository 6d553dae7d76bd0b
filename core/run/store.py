"""The run store: a run directory where every finished unit is written once.

Layout (see docs/architecture.md):

    <run>/config.yaml          resolved config
    <run>/config.hash          hash of what the run produces (performance keys excluded, prompt templates included)
    <run>/prompts.json         the prompt templates the hash covers: id -> content hash
    <run>/units/<stage>/<id>.json   one record per finished unit (with its usage), as it is published
    <run>/units/<stage>/sealed/*.parquet   the units of earlier stage runs, sealed (unit id, record JSON)
    <run>/usage/unfinished/<stage>/<id>.<attempt>.json   what attempts that left no unit spent
    <run>/<stage>.parquet      a compacted view of a stage's units

Files are written to a temporary name, fsynced, then published. A unit is
published with `link()`, which fails if the name exists, so two writers (a
retried Ray task and its ghost) can never both publish the same unit: a crash
at any instant loses at most the units in flight and never writes one twice.

`seal` folds a stage's loose unit files into one Parquet shard and removes them: a run of 100,000 rollouts
would keep a handful of shards, not 500,000 small files, and a rerun learns what is done by reading the
shards' id columns and listing the few loose files, never by stat-ing each unit. A unit id that is sealed
is never published again unless `forget` takes it out. Every read here sees sealed units; the entry points
seal every stage's units when their stages end (pipeline/stages.py), and a stage with more than
`MERGE_SHARDS` shards has them merged into one.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, TextIO, TypeVar

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from core.cli import InputError
from core.codec import RecordError
from core.config import config_hash
from core.iterate import batched
from core.records import ROW_GROUP, Record, write_parquet
from core.run.keyed import KeyedRows
from core.run.usage import RoleUsage

R = TypeVar("R", bound=Record)

TMP_SUFFIX = ".tmp"


class ConfigMismatch(InputError, RuntimeError):
    """A rerun whose config would produce different outputs than the run it continues."""


class UnitExists(FileExistsError):
    """A unit was already published; units are written exactly once."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _temp_file(final: Path) -> Iterator[Path]:
    """A temp file beside `final` (same filesystem), removed unless it was renamed away."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=TMP_SUFFIX, dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never a part."""
    with _temp_file(path) as tmp:
        _write_synced(tmp, data)
        os.replace(tmp, path)
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_open(path: Path) -> Iterator[TextIO]:
    """A text file written a line at a time that replaces `path` whole when the block ends (never if it raises)."""
    with _temp_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    _fsync_dir(path.parent)


def atomic_write_parquet(records: Iterable[Record], path: Path, cls: type[Record]) -> None:
    with _temp_file(path) as tmp:
        write_parquet(records, tmp, cls)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    _fsync_dir(path.parent)


def publish_once(path: Path, data: bytes) -> None:
    """Create `path` with `data` atomically; raise UnitExists if it already exists."""
    with _temp_file(path) as tmp:
        _write_synced(tmp, data)
        try:
            os.link(tmp, path)
        except FileExistsError as exc:
            raise UnitExists(f"{path} already exists: units are written once") from exc
        except OSError as exc:  # filesystems without hard links: rename if still absent
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                raise
            if path.exists():
                raise UnitExists(f"{path} already exists: units are written once") from exc
            os.rename(tmp, path)
    _fsync_dir(path.parent)


class RunStore:
    """One run directory. Create it with `RunStore.open(root, config, force=...)`."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._sealed_units: dict[str, SealedUnits] = {}

    @classmethod
    def open(cls, root: Path, config: dict[str, Any], force: bool = False, prompts: Mapping[str, str] | None = None) -> RunStore:
        """Create or continue a run; refuse a different config (or prompt templates: id -> hash) unless `force`."""
        store = cls(root)
        store.root.mkdir(parents=True, exist_ok=True)
        prompts = dict(sorted((prompts or {}).items()))
        digest = config_hash(config | {"prompts": prompts} if prompts else config)
        hash_file = store.root / "config.hash"
        if hash_file.exists():
            previous = hash_file.read_text().strip()
            if previous != digest and not force:
                raise ConfigMismatch(
                    f"{store.root} was made with config hash {previous}, this config hashes to {digest}"
                    f"{store._changed_prompts(prompts)}. Use another run.dir / run.name, or run.resume=force to continue "
                    f"anyway (compare with {store.root / 'config.yaml'} and {store.root / 'prompts.json'})."
                )
        atomic_write_text(store.root / "config.yaml", yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        if prompts:
            atomic_write_text(store.root / "prompts.json", json.dumps(prompts, indent=1) + "\n")
        atomic_write_text(hash_file, digest + "\n")
        return store

    def _changed_prompts(self, prompts: Mapping[str, str]) -> str:
        """ "; prompt templates changed: ..." when the run's prompts.json differs from `prompts`."""
        path = self.root / "prompts.json"
        before = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        changed = sorted(t for t in before.keys() | prompts.keys() if before.get(t) != prompts.get(t))
        if not changed or not before:
            return ""
        shown = ", ".join(f"{t} ({before.get(t, 'new')} -> {prompts.get(t, 'removed')})" for t in changed[:5])
        return f"; prompt templates changed since: {shown}" + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")

    @property
    def config_hash(self) -> str:
        return (self.root / "config.hash").read_text().strip()

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    # ---- units

    def _unit_path(self, stage: str, unit_id: str) -> Path:
        if not unit_id or "/" in unit_id or unit_id.startswith("."):
            raise ValueError(f"unit id {unit_id!r} must be a plain file name")
        return self.root / "units" / stage / f"{unit_id}.json"

    def commit(self, stage: str, unit_id: str, record: Record) -> None:
        """Publish a finished unit exactly once (raises UnitExists on a second try)."""
        path = self._unit_path(stage, unit_id)
        if unit_id in self._sealed(stage).rows:
            raise UnitExists(f"{path} already exists (sealed): units are written once")
        publish_once(path, record.to_json().encode("utf-8"))

    def spent_unfinished(self, stage: str, unit_id: str, usage: Mapping[str, RoleUsage], why: str) -> None:
        """Keep what an attempt of a unit spent when it leaves no unit (each attempt its own file)."""
        if not any(u.calls or u.retries or u.failures for u in usage.values()):
            return
        name = f"{self._unit_path(stage, unit_id).stem}.{time.time_ns()}.{os.getpid()}.json"
        data = {"unit": unit_id, "why": why, "usage": usage}
        publish_once(self.root / "usage" / "unfinished" / stage / name, orjson.dumps(data, option=orjson.OPT_SORT_KEYS))

    def is_done(self, stage: str, unit_id: str) -> bool:
        return self._unit_path(stage, unit_id).exists() or unit_id in self._sealed(stage).rows

    def done(self, stage: str) -> set[str]:
        """Ids of the finished units of a stage (temp files of interrupted writes are ignored)."""
        return self._loose(stage) | set(self._sealed(stage).rows)

    def any_done(self, stage: str) -> bool:
        """Whether a unit of the stage is finished (without listing the ids)."""
        return len(self._sealed(stage).rows) > 0 or bool(self._loose(stage))

    def _loose(self, stage: str) -> set[str]:
        folder = self.root / "units" / stage
        if not folder.is_dir():
            return set()
        with os.scandir(folder) as entries:  # names only: no stat per unit
            return {e.name[: -len(".json")] for e in entries if e.name.endswith(".json") and not e.name.startswith(".")}

    def _sealed(self, stage: str) -> SealedUnits:
        """The stage's sealed shards, read again only when the set of shards changed."""
        folder = self.root / "units" / stage / SEALED
        shards = tuple(sorted(p.name for p in folder.glob("*.parquet"))) if folder.is_dir() else ()
        known = self._sealed_units.get(stage)
        if known is None or known.shards != shards:
            known = self._sealed_units[stage] = SealedUnits.read(folder, shards)
        return known

    def load_unit(self, stage: str, unit_id: str, cls: type[R]) -> R:
        """One finished unit (FileNotFoundError when it is not finished)."""
        path = self._unit_path(stage, unit_id)
        try:
            return _decoded(cls, path.read_text(encoding="utf-8"), path)
        except FileNotFoundError:
            sealed = self._sealed(stage).records([unit_id])
            if unit_id not in sealed:
                raise FileNotFoundError(f"{path}: no such unit") from None
            return _decoded(cls, sealed[unit_id], path)

    def units_of(self, stage: str, unit_ids: Iterable[str], cls: type[R]) -> dict[str, R]:
        """Those of `unit_ids` that are finished, by id: loose files read one by one, sealed ones a row group at a
        time (a batch of neighbouring ids decodes a few row groups, whatever the run's size)."""
        wanted = set(unit_ids)
        loose = self._loose(stage) & wanted
        folder = self.root / "units" / stage
        found = {u: _decoded(cls, text, folder / SEALED) for u, text in self._sealed(stage).records(wanted - loose).items()}
        for unit_id in sorted(loose):
            path = folder / f"{unit_id}.json"
            with contextlib.suppress(FileNotFoundError):  # sealed meanwhile: left for the next reader
                found[unit_id] = _decoded(cls, path.read_text(encoding="utf-8"), path)
        return found

    def load_map(self, stage: str, cls: type[R]) -> dict[str, R]:
        """The finished units of a stage by id."""
        return dict(sorted(self.iter_units(stage, cls)))

    def iter_units(self, stage: str, cls: type[R]) -> Iterator[tuple[str, R]]:
        """The finished units of a stage, (id, record), sealed ones first, reading a shard at a time."""
        for unit_id, text, where in self.iter_json(stage):
            yield unit_id, _decoded(cls, text, where)

    def iter_json(self, stage: str) -> Iterator[tuple[str, str, Path]]:
        """The finished units of a stage as stored, (id, record JSON, the file it is in), in id order, a row group
        of each shard at a time. A unit in two places (a seal, merge or forget cut short) is the same record: read once."""
        folder = self.root / "units" / stage

        def loose() -> Iterator[tuple[str, str, Path]]:
            for unit_id in sorted(self._loose(stage)):
                path = folder / f"{unit_id}.json"
                with contextlib.suppress(FileNotFoundError):  # sealed meanwhile: read in the shard by the next reader
                    yield unit_id, path.read_text(encoding="utf-8"), path

        shards = [_shard_rows(folder / SEALED / shard) for shard in self._sealed(stage).shards]
        yield from _once_each(heapq.merge(*shards, loose(), key=lambda row: row[0]))

    def load(self, stage: str, cls: type[R]) -> list[R]:
        return list(self.load_map(stage, cls).values())

    def compact(self, stage: str, cls: type[R], name: str | None = None) -> Path:
        """Write all finished units of a stage as one Parquet file (atomically)."""
        target = self.root / (name or f"{stage}.parquet")
        atomic_write_parquet((record for _, record in self.iter_units(stage, cls)), target, cls)  # in id order, streamed
        return target

    def seal(self, stage: str) -> int:
        """Move the stage's loose unit files into a new sealed shard (fsynced before they go); returns how many.
        More than `MERGE_SHARDS` shards (a run resumed many times) are then merged into one."""
        folder = self.root / "units" / stage
        sealed = self._sealed(stage).rows
        loose = sorted(self._loose(stage))
        fresh = [u for u in loose if u not in sealed]
        if fresh:
            self._new_shard(stage, ((u, (folder / f"{u}.json").read_text(encoding="utf-8")) for u in fresh))
        for unit_id in loose:
            (folder / f"{unit_id}.json").unlink(missing_ok=True)
        shards = self._sealed(stage).shards
        if len(shards) > MERGE_SHARDS:
            self._rewrite_shards(stage, shards, keep=lambda _: True)
        return len(fresh)

    def seal_all(self) -> int:
        """Seal every stage's loose units; returns how many were sealed."""
        units = self.root / "units"
        stages = sorted(p.name for p in units.iterdir() if p.is_dir()) if units.is_dir() else []
        return sum(self.seal(stage) for stage in stages)

    def forget(self, stage: str, unit_ids: Iterable[str]) -> int:
        """Take finished units out of the run, so that a rerun makes them again (a unit to redo, say a verdict
        whose judge was wrong); returns how many there were. What they spent stays in the run's usage."""
        gone = set(unit_ids)
        folder = self.root / "units" / stage
        loose = self._loose(stage) & gone
        for unit_id in loose:
            (folder / f"{unit_id}.json").unlink(missing_ok=True)
        sealed = self._sealed(stage)
        taken = {u for u in gone if u in sealed.rows}
        if taken:
            self._rewrite_shards(stage, sealed.shards, keep=lambda unit_id: unit_id not in gone)
        return len(loose | taken)

    def _new_shard(self, stage: str, rows: Iterable[tuple[str, str]]) -> Path:
        folder = self.root / "units" / stage / SEALED
        shard = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{time.time_ns()}.parquet"
        with _temp_file(shard) as tmp:
            _write_shard(tmp, rows)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.link(tmp, shard)
        _fsync_dir(shard.parent)
        return shard

    def _rewrite_shards(self, stage: str, shards: tuple[str, ...], keep: Callable[[str], bool]) -> None:
        """`shards` as one new shard of the units `keep` keeps; the old ones go once it is written (a rewrite
        cut short leaves units in two shards, which readers read once)."""
        folder = self.root / "units" / stage / SEALED
        merged = heapq.merge(*(_shard_rows(folder / shard) for shard in shards), key=lambda row: row[0])
        self._new_shard(stage, ((u, text) for u, text, _ in _once_each(merged) if keep(u)))
        for shard in shards:
            (folder / shard).unlink()
        _fsync_dir(folder)

    def clean_temp_files(self) -> int:
        """Remove temp files left by writes that a crash interrupted (where the store writes: the run's own
        files, units and usage; never a walk of every rollout's workspace)."""
        removed = 0
        places = [self.root.glob(f".*{TMP_SUFFIX}")] + [
            (self.root / d).rglob(f".*{TMP_SUFFIX}") for d in ("units", "usage", "stats") if (self.root / d).is_dir()
        ]
        for tmp in (t for place in places for t in place):
            tmp.unlink(missing_ok=True)
            removed += 1
        return removed


@dataclass(frozen=True)
class SealedUnits:
    """A stage's sealed shards: the index of their unit ids (their records are read when asked for)."""

    shards: tuple[str, ...]
    rows: KeyedRows

    @classmethod
    def read(cls, folder: Path, shards: tuple[str, ...]) -> SealedUnits:
        return cls(shards, KeyedRows([folder / s for s in shards], "unit_id"))

    def records(self, unit_ids: Iterable[str]) -> dict[str, str]:
        """The record JSON of those of `unit_ids` that are sealed, by id."""
        return {u: str(row["record"]) for u, row in self.rows.fetch(unit_ids, ["record"]).items()}


SEALED = "sealed"
MERGE_SHARDS = 8  # a stage with more sealed shards has them merged into one
_SHARD_SCHEMA = pa.schema([("unit_id", pa.string()), ("record", pa.string())])


def _write_shard(path: Path, rows: Iterable[tuple[str, str]]) -> None:
    """(unit id, record JSON) rows, in id order, as Parquet, `ROW_GROUP` at a time: memory stays flat however many."""
    with pq.ParquetWriter(path, _SHARD_SCHEMA, compression="zstd") as writer:
        for batch in batched(rows, ROW_GROUP):
            writer.write_table(pa.table(list(zip(*batch)), schema=_SHARD_SCHEMA))


def _shard_rows(path: Path) -> Iterator[tuple[str, str, Path]]:
    """A shard's (unit id, record JSON, shard) rows, a row group at a time."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=ROW_GROUP):
        ids, records = batch.column("unit_id").to_pylist(), batch.column("record").to_pylist()
        yield from ((str(u), str(r), path) for u, r in zip(ids, records))


def _once_each(rows: Iterable[tuple[str, str, Path]]) -> Iterator[tuple[str, str, Path]]:
    """Rows in id order with a repeated id left out (a unit in two places is the same record)."""
    previous = None
    for row in rows:
        if row[0] != previous:
            previous = row[0]
            yield row


def _decoded(cls: type[R], text: str, where: Path) -> R:
    try:
        return cls.from_json(text)
    except (json.JSONDecodeError, RecordError) as exc:
        raise RecordError(f"{where}: unreadable {cls.__name__} record: {exc}") from exc
