"""benchmarks.scale's clones: fresh ids, content of their own (no content-keyed store can collapse two), a run the
reader reads whole. The stages it times are the product's own entry points, tested where they live."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchmarks.scale import clone_run, footprint, make_seed
from core.run.reader import RunReader
from fakes.runs import build_run, varied_run


def _digests(folder: Path, suffix: str) -> set[str]:
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob(f"*{suffix}")}


def test_clones_have_fresh_ids_and_their_own_bytes(tmp_path: Path) -> None:
    seed_dir = tmp_path / "seed"
    build_run(seed_dir, varied_run(3))
    seeds = [s for s in make_seed(seed_dir, 3) if (s.workspace / "previews").is_dir()]
    tasks = clone_run(seeds[:1], seed_dir, tmp_path / "run", 3, workers=1)

    run = RunReader.open(tmp_path / "run")
    rollouts = run.rollouts()
    assert sorted(r.task_id for r in rollouts) == sorted(t.task_id for t in tasks) and len(set(run.tasks())) == 3
    source = seeds[0]
    for rollout in rollouts:
        workspace = run.workspace(rollout)
        assert workspace.name == rollout.task_id and all((run.root / p).exists() for p in rollout.artifacts.values())
        (trajectory, *_) = run.trajectories(rollout)
        assert trajectory.task_id == rollout.task_id
    pngs = [_digests(run.workspace(r), ".png") for r in rollouts]
    assert all(pngs) and not pngs[0] & pngs[1] and not pngs[1] & pngs[2]  # every clone's images are its own
    assert not _digests(source.workspace, ".png") & pngs[0]
    assert len(set().union(*(_digests(run.workspace(r), ".pdf") for r in rollouts))) == 3
    size, files = footprint(run.root)
    assert files == sum(1 for p in run.root.rglob("*") if p.is_file()) and size > 0
