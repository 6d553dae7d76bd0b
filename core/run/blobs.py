"""A run's images, each stored once by its content: `<run>/blobs/<hh>/<sha256>.<ext>`.

A model is shown the same slide render many times (every later turn resends it) and a render often equals a
preview of the final deck; trajectories, the deck report, samples and the report all name an image by its
file in this store, so each distinct image is one file however often it is referenced. A rollout's workspace
refers to a blob by a relative path (`../../blobs/ab/ab12….webp`), so whatever resolves a workspace's image
paths today resolves a blob the same way (`is_blob_ref` tells such a path from one outside the workspace).

Blobs are published with `link()` like units (core.run.store): a name is written at most once, its content is
its name, and a blob is read-only.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from core.run.store import UnitExists, publish_once

FOLDER = "blobs"
_REF = re.compile(rf"^(\.\./)+{FOLDER}/[0-9a-f]{{2}}/[0-9a-f]{{64}}\.[a-z0-9]{{1,5}}$")
_CHUNK = 1 << 20


def is_blob_ref(ref: str) -> bool:
    """Whether a workspace-relative image path names a blob of the run (the only paths allowed to leave it)."""
    return bool(_REF.match(ref))


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class BlobStore:
    """The blobs of one run (`BlobStore(run_root)`)."""

    def __init__(self, run_root: Path):
        self.root = Path(run_root).resolve() / FOLDER

    def path_of(self, digest: str, suffix: str) -> Path:
        return self.root / digest[:2] / f"{digest}{suffix.lower()}"

    def put(self, source: Path) -> Path:
        """The blob holding `source`'s bytes, published if new (hard-linked when on the same filesystem, else copied).

        `source` must not change afterwards: a linked blob is the same file (the pack step removes the source).
        A source that is not a regular file (a link an agent's command left in its workspace) is a ValueError."""
        if not stat.S_ISREG(os.lstat(source).st_mode):
            raise ValueError(f"{source}: not a regular file, not stored")
        target = self.path_of(file_digest(source), source.suffix)
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except FileExistsError:
            return target  # another writer published the same content
        except OSError:  # another filesystem, or one without hard links
            try:
                publish_once(target, source.read_bytes())
            except UnitExists:
                return target
        os.chmod(target, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        return target

    def ref(self, blob: Path, workspace: Path) -> str:
        """`blob` as a path relative to `workspace` (how trajectories and the deck report name it)."""
        return Path(os.path.relpath(blob, Path(workspace).resolve())).as_posix()
