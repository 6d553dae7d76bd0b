"""benchmarks.scale's clones: fresh ids, content of their own (no content-keyed store can collapse two), a run the
reader reads whole. The stages it times are the product's own entry points, tested where they live."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.scale import BLOB_REF, clone_run, footprint, make_seed
from core.records import Rollout
from core.run.packed import RECORD
from core.run.reader import RunReader
from fakes.runs import build_run, varied_run
from pipeline.config import KeepRenders
from pipeline.pack import Packer


def _pack(run_dir: Path) -> None:
    """Pack a fake run's rollouts as the rollouts stage does when each ends (fakes.runs writes them unpacked)."""
    run = RunReader.open(run_dir)
    packer = Packer(run.root, KeepRenders.inspected)
    for rollout in run.rollouts():
        workspace = run.workspace(rollout)
        prefix = workspace.relative_to(run.root).as_posix() + "/"
        local = {name: path.removeprefix(prefix) for name, path in rollout.artifacts.items()}
        after = packer.pack(workspace, run.trajectories(rollout), local)
        run.store.forget("rollouts", [rollout.task_id])
        run.store.commit("rollouts", rollout.task_id, replace(rollout, artifacts={n: prefix + p for n, p in after.items()}))
    run.store.compact("rollouts", Rollout)


def _blobs(workspace: Path) -> set[str]:
    """The digests of the blobs a packed rollout's record names (each file's bytes, hashed again)."""
    text = gzip.decompress((workspace / RECORD).read_bytes()).decode("utf-8")
    return {hashlib.sha256((workspace / ref).read_bytes()).hexdigest() for ref in BLOB_REF.findall(text)}


def test_clones_have_fresh_ids_and_their_own_bytes(tmp_path: Path) -> None:
    seed_dir = tmp_path / "seed"
    build_run(seed_dir, varied_run(3))
    _pack(seed_dir)
    seeds = [s for s in make_seed(seed_dir, 3) if _blobs(s.workspace)]
    tasks = clone_run(seeds[:1], seed_dir, tmp_path / "run", 3, workers=1)

    run = RunReader.open(tmp_path / "run")
    rollouts = run.rollouts()
    assert sorted(r.task_id for r in rollouts) == sorted(t.task_id for t in tasks) and len(set(run.tasks())) == 3
    for rollout in rollouts:
        workspace = run.workspace(rollout)
        assert workspace.name == rollout.task_id and all((run.root / p).exists() for p in rollout.artifacts.values())
        (trajectory, *_) = run.trajectories(rollout)
        assert trajectory.task_id == rollout.task_id
        assert all(s.png is None or (workspace / s.png).is_file() for s in run.deck(rollout).slides)
    images = [_blobs(run.workspace(r)) for r in rollouts]
    assert all(images) and not images[0] & images[1] and not images[1] & images[2]  # every clone's images are its own
    assert not _blobs(seeds[0].workspace) & images[0]
    assert len({hashlib.sha256(p.read_bytes()).hexdigest() for p in run.path("rollouts").rglob("*.pdf")}) == 3
    size, files = footprint(run.root)
    assert files == sum(1 for p in run.root.rglob("*") if p.is_file()) and size > 0


def test_a_seed_run_made_before_packing_is_refused(tmp_path: Path) -> None:
    build_run(tmp_path / "seed", varied_run(2))
    with pytest.raises(RuntimeError, match="not packed"):
        make_seed(tmp_path / "seed", 2)
