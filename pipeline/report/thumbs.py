"""Slide thumbnails: downscaled JPEGs under report/thumbs/, remade only when a source changes.

A thumbnail mirrors its source's run-relative path (`rollouts/<id>/previews/slide_01.png`
-> `thumbs/rollouts/<id>/previews/slide_01.jpg`). `thumbs/manifest.json` keeps each
source's (mtime_ns, size) at the time its thumbnail was made, so a rerun over an
unchanged run decodes no image. Pillow releases the GIL while it decodes, scales and
encodes, so a thread pool uses every core.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from core.run.store import atomic_write_text

log = logging.getLogger(__name__)

WIDTH, MAX_HEIGHT = 320, 420  # posters are portrait
QUALITY = 80
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ThumbStats:
    made: int
    reused: int
    failed: int


def make_thumbnails(run_root: Path, folder: Path, sources: Iterable[str]) -> tuple[dict[str, str], ThumbStats]:
    """Thumbnails of the run-relative `sources` that exist; returns source -> thumbnail path relative to `folder`'s parent."""
    manifest_path = folder / MANIFEST
    try:
        cached: dict[str, list[int]] = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        cached = {}
    keys: dict[str, list[int]] = {}
    todo: list[str] = []
    for source in dict.fromkeys(sources):
        try:
            st = (run_root / source).stat()
        except OSError:
            continue
        keys[source] = [st.st_mtime_ns, st.st_size]
        if cached.get(source) != keys[source] or not _target(folder, source).is_file():
            todo.append(source)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failed = {s for s, ok in zip(todo, pool.map(lambda s: _thumbnail(run_root / s, _target(folder, s)), todo)) if not ok}
    usable = {s: k for s, k in keys.items() if s not in failed}
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(manifest_path, json.dumps(cached | usable, sort_keys=True))
    found = {s: _target(folder, s).relative_to(folder.parent).as_posix() for s in usable}
    return found, ThumbStats(made=len(todo) - len(failed), reused=len(keys) - len(todo), failed=len(failed))


def _target(folder: Path, source: str) -> Path:
    return (folder / source).with_suffix(".jpg")


def _thumbnail(source: Path, target: Path) -> bool:
    try:
        with Image.open(source) as image:
            factor = int(max(image.width / WIDTH, image.height / MAX_HEIGHT))  # the box filter gets close, cheaply
            small = image.reduce(factor) if factor > 1 else image.copy()
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        log.warning("no thumbnail of %s: %s", source, exc)
        return False
    small.thumbnail((WIDTH, MAX_HEIGHT))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    _rgb(small).save(partial, "JPEG", quality=QUALITY)
    os.replace(partial, target)
    return True


def _rgb(image: Image.Image) -> Image.Image:
    """JPEG has no alpha: flatten transparency onto white."""
    if image.mode in ("RGBA", "LA", "P"):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return image.convert("RGB")
