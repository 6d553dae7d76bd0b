"""The export's rows: each kept sample written as it comes, its images placed once, dealt into train and val."""

from __future__ import annotations

import json
import os
import shutil
from functools import partial
from pathlib import Path

from core.run.blobs import BlobStore
from core.run.store import atomic_open
from train.samples import Sample


def _place_image(src: Path, dst: Path, link: bool) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        return
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:  # another filesystem, or no hard links: copy
            pass
    shutil.copy2(src, dst)


class SampleWriter:
    """Writes each kept sample's row as it comes (to a spool beside the export), placing its images under images/
    and naming them relatively: a blob of the run's store (core.run.blobs) once by its name, shared by every sample
    that shows it; another at <task_id>/<workspace path>. `split` then deals the rows into train.jsonl and
    val.jsonl by task: memory holds one row at a time however large the run."""

    def __init__(self, out_dir: Path, rollouts_dir: Path, link: bool):
        self.out_dir, self.rollouts_dir, self.link = out_dir, rollouts_dir, link
        self.blobs = BlobStore(rollouts_dir.parent).root
        shutil.rmtree(out_dir / "images", ignore_errors=True)  # images of an earlier export
        out_dir.mkdir(parents=True, exist_ok=True)
        self.spool = out_dir / ".samples.jsonl.part"
        self._fh = open(self.spool, "w", encoding="utf-8")

    def _image_path(self, task_id: str, src: Path) -> str:
        rel = Path("images") / (
            src.relative_to(self.blobs)
            if src.is_relative_to(self.blobs)
            else task_id / src.relative_to(self.rollouts_dir / task_id)
        )
        _place_image(src, self.out_dir / rel, self.link)
        return rel.as_posix()

    def write(self, sample: Sample) -> None:
        self._fh.write(json.dumps(sample.to_swift(partial(self._image_path, sample.task_id)), ensure_ascii=False) + "\n")

    def split(self, held_out: set[str]) -> None:
        """The spooled rows as train.jsonl and val.jsonl (each published whole), in the order they came."""
        self._fh.close()
        with atomic_open(self.out_dir / "train.jsonl") as train, atomic_open(self.out_dir / "val.jsonl") as val:
            with open(self.spool, encoding="utf-8") as rows:
                for row in rows:
                    (val if json.loads(row)["task_id"] in held_out else train).write(row)
        self.spool.unlink()

    def __enter__(self) -> SampleWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self._fh.close()
        self.spool.unlink(missing_ok=True)  # an export that failed leaves no spool
