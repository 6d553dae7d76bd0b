"""The run's blob store: each image once by its content, read-only, published like a unit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from core.run.blobs import BlobStore, is_blob_ref


def test_a_content_is_stored_once_and_named_by_its_digest(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "run")
    one, same, other = tmp_path / "a.webp", tmp_path / "b.webp", tmp_path / "c.webp"
    one.write_bytes(b"pixels")
    same.write_bytes(b"pixels")
    other.write_bytes(b"other pixels")
    first = store.put(one)
    assert store.put(same) == first and store.put(other) != first
    assert first.read_bytes() == b"pixels" and first.parent.name == first.name[:2] and first.suffix == ".webp"
    assert sorted(p.name for p in store.root.rglob("*") if p.is_file()) == sorted({first.name, store.put(other).name})
    assert not os.stat(first).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)  # read-only


def test_a_link_is_refused_and_its_target_never_stored(tmp_path: Path) -> None:
    canary = tmp_path / "secret.txt"
    canary.write_text("not for the run")
    link = tmp_path / "ws" / "render.webp"
    link.parent.mkdir()
    link.symlink_to(canary)
    store = BlobStore(tmp_path / "run")
    with pytest.raises(ValueError, match="not a regular file"):
        store.put(link)
    assert not store.root.exists()


def test_a_workspace_names_a_blob_by_a_relative_path_of_one_shape(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "run")
    source = tmp_path / "run" / "rollouts" / "t1" / "renders" / "s.webp"
    source.parent.mkdir(parents=True)
    source.write_bytes(b"x")
    ref = store.ref(store.put(source), source.parent.parent)
    assert ref.startswith("../../blobs/") and is_blob_ref(ref)
    assert (source.parent.parent / ref).resolve() == store.put(source)
    for outside in ("../../etc/passwd", "../../blobs/ab/abc.webp", "blobs/../../x.png", "/abs/blobs/00/" + "0" * 64 + ".png"):
        assert not is_blob_ref(outside)
