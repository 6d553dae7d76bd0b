"""The run store: a run directory where every finished unit is written once.

Layout (see docs/architecture.md):

    <run>/config.yaml          resolved config
    <run>/config.hash          hash of what the run produces (performance keys excluded, prompt templates included)
    <run>/prompts.json         the prompt templates the hash covers: id -> content hash
    <run>/units/<stage>/<id>.json   one record per finished unit (with its usage): the index a rerun reads
    <run>/usage/unfinished/<stage>/<id>.<attempt>.json   what attempts that left no unit spent
    <run>/<stage>.parquet      a compacted view of a stage's units

Files are written to a temporary name, fsynced, then published. A unit is
published with `link()`, which fails if the name exists, so two writers (a
retried Ray task and its ghost) can never both publish the same unit: a crash
at any instant loses at most the units in flight and never writes one twice.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, TypeVar

import orjson
import yaml

from core.cli import InputError
from core.codec import RecordError
from core.config import config_hash
from core.records import Record, write_parquet
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
        publish_once(self._unit_path(stage, unit_id), record.to_json().encode("utf-8"))

    def spent_unfinished(self, stage: str, unit_id: str, usage: Mapping[str, RoleUsage], why: str) -> None:
        """Keep what an attempt of a unit spent when it leaves no unit (each attempt its own file)."""
        if not any(u.calls or u.retries or u.failures for u in usage.values()):
            return
        name = f"{self._unit_path(stage, unit_id).stem}.{time.time_ns()}.{os.getpid()}.json"
        data = {"unit": unit_id, "why": why, "usage": usage}
        publish_once(self.root / "usage" / "unfinished" / stage / name, orjson.dumps(data, option=orjson.OPT_SORT_KEYS))

    def is_done(self, stage: str, unit_id: str) -> bool:
        return self._unit_path(stage, unit_id).exists()

    def done(self, stage: str) -> set[str]:
        """Ids of the finished units of a stage (temp files of interrupted writes are ignored)."""
        folder = self.root / "units" / stage
        if not folder.is_dir():
            return set()
        return {p.stem for p in folder.glob("*.json") if not p.name.startswith(".")}

    def load_unit(self, stage: str, unit_id: str, cls: type[R]) -> R:
        """One finished unit (FileNotFoundError when it is not finished)."""
        path = self._unit_path(stage, unit_id)
        try:
            return cls.from_json(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, RecordError) as exc:
            raise RecordError(f"{path}: unreadable {cls.__name__} record: {exc}") from exc

    def load_map(self, stage: str, cls: type[R]) -> dict[str, R]:
        """The finished units of a stage by id."""
        return {unit_id: self.load_unit(stage, unit_id, cls) for unit_id in sorted(self.done(stage))}

    def load(self, stage: str, cls: type[R]) -> list[R]:
        return list(self.load_map(stage, cls).values())

    def compact(self, stage: str, cls: type[R], name: str | None = None) -> Path:
        """Write all finished units of a stage as one Parquet file (atomically)."""
        target = self.root / (name or f"{stage}.parquet")
        atomic_write_parquet(self.load(stage, cls), target, cls)
        return target

    def clean_temp_files(self) -> int:
        """Remove temp files left by writes that a crash interrupted."""
        removed = 0
        for tmp in self.root.rglob(f".*{TMP_SUFFIX}"):
            tmp.unlink(missing_ok=True)
            removed += 1
        return removed
