"""The export's rows: each kept sample written as it comes, its images placed once, dealt into train and val."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from functools import partial
from pathlib import Path
from typing import Any

from core.records import task_of
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


class ImageFolder:
    """A dataset's images/ (emptied first): each image placed once and named relatively: a blob of the run's store
    (core.run.blobs) by its name, shared by every sample that shows it; another at <rollout key>/<workspace path>."""

    def __init__(self, out_dir: Path, rollouts_dir: Path, link: bool):
        self.out_dir, self.rollouts_dir, self.link = out_dir, rollouts_dir, link
        self.blobs = BlobStore(rollouts_dir.parent).root
        shutil.rmtree(out_dir / "images", ignore_errors=True)  # images of an earlier export
        out_dir.mkdir(parents=True, exist_ok=True)

    def place(self, task_id: str, src: Path) -> str:
        """The image `src` of the rollout `task_id`, placed; its path relative to the dataset."""
        rel = Path("images") / (
            src.relative_to(self.blobs)
            if src.is_relative_to(self.blobs)
            else task_id / src.relative_to(self.rollouts_dir / task_id)
        )
        _place_image(src, self.out_dir / rel, self.link)
        return rel.as_posix()


class SampleWriter:
    """Writes each kept sample's row as it comes (to a spool beside the export), its images placed in the export's
    ImageFolder. `split` then deals the rows into train.jsonl and val.jsonl by task: memory holds one row at a time
    however large the run."""

    def __init__(self, out_dir: Path, rollouts_dir: Path, link: bool):
        self.out_dir = out_dir
        self.images = ImageFolder(out_dir, rollouts_dir, link)
        self.spool = out_dir / ".samples.jsonl.part"
        self._fh = open(self.spool, "w", encoding="utf-8")

    def write(self, sample: Sample) -> None:
        self.write_row(sample.to_swift(partial(self.images.place, sample.task_id)))

    def write_row(self, row: dict[str, Any]) -> None:
        """A row whose images are placed already (its `task_id` decides its split)."""
        self._fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def split(self, held_out: set[str]) -> tuple[int, int]:
        """The spooled rows as train.jsonl and val.jsonl (their counts returned) (each published whole), in the order they came; `held_out`
        names tasks (a task's rollouts, `<id>~k`, go where it goes)."""
        self._fh.close()
        counts = {False: 0, True: 0}
        with atomic_open(self.out_dir / "train.jsonl") as train, atomic_open(self.out_dir / "val.jsonl") as val:
            with open(self.spool, encoding="utf-8") as rows:
                for row in rows:
                    into_val = task_of(json.loads(row)["task_id"]) in held_out
                    (val if into_val else train).write(row)
                    counts[into_val] += 1
        self.spool.unlink()
        return counts[False], counts[True]

    def __enter__(self) -> SampleWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self._fh.close()
        self.spool.unlink(missing_ok=True)  # an export that failed leaves no spool


def val_tasks(task_ids: list[str], fraction: float, seed: int) -> set[str]:
    """A deterministic share of the tasks (at least one when asked for, never all)."""
    if fraction <= 0 or len(task_ids) < 2:
        return set()
    n = min(max(1, round(len(task_ids) * fraction)), len(task_ids) - 1)
    ranked = sorted(task_ids, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
    return set(ranked[:n])
