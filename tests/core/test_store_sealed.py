"""Sealed units: a finished stage's unit files folded into a shard, still read, resumed and written once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.records import Rollout
from core.run.store import SEALED, RunStore, UnitExists


def _store(tmp_path: Path, ids: list[str]) -> RunStore:
    store = RunStore.open(tmp_path / "run", {"k": 1})
    for unit_id in ids:
        store.commit("rollouts", unit_id, Rollout(task_id=unit_id, status="done"))
    return store


def test_a_sealed_stage_is_one_shard_and_reads_as_before(tmp_path: Path) -> None:
    store = _store(tmp_path, [f"t{i:04d}" for i in range(1200)])
    before = store.load_map("rollouts", Rollout)
    store.compact("rollouts", Rollout)
    store.seal("rollouts")
    folder = store.path("units", "rollouts")
    assert sorted(os.listdir(folder)) == [SEALED] and len(os.listdir(folder / SEALED)) == 1
    fresh = RunStore(store.root)  # a rerun: nothing cached
    assert fresh.load_map("rollouts", Rollout) == before and fresh.done("rollouts") == set(before)
    assert fresh.is_done("rollouts", "t0007") and not fresh.is_done("rollouts", "t9999")
    assert fresh.load_unit("rollouts", "t1199", Rollout) == before["t1199"]
    with pytest.raises(FileNotFoundError, match="t9999"):
        fresh.load_unit("rollouts", "t9999", Rollout)


def test_units_are_read_in_id_order_and_a_batch_by_id_decodes_only_its_row_groups(tmp_path: Path) -> None:
    store = _store(tmp_path, [f"t{i:04d}" for i in range(0, 3000, 2)])
    store.seal("rollouts")
    for i in range(1, 3000, 2):  # a second shard interleaved with the first, and loose units after it
        store.commit("rollouts", f"t{i:04d}", Rollout(task_id=f"t{i:04d}", status="done"))
    store.seal("rollouts")
    store.commit("rollouts", "t0000b", Rollout(task_id="t0000b", status="failed"))
    fresh = RunStore(store.root)
    ids = [u for u, _ in fresh.iter_units("rollouts", Rollout)]
    assert ids == sorted(ids) and len(ids) == 3001
    wanted = ["t0004", "t0005", "t0000b", "t2999", "t9999"]
    found = fresh.units_of("rollouts", wanted, Rollout)
    assert sorted(found) == sorted(wanted[:-1]) and found["t0000b"].status == "failed"
    assert all(found[u].task_id == u for u in found)


def test_a_sealed_unit_is_never_published_again(tmp_path: Path) -> None:
    store = _store(tmp_path, ["a", "b"])
    store.seal("rollouts")
    with pytest.raises(UnitExists, match="sealed"):
        RunStore(store.root).commit("rollouts", "a", Rollout(task_id="a", status="failed"))
    assert RunStore(store.root).load_unit("rollouts", "a", Rollout).status == "done"


def test_units_after_a_seal_join_the_next_shard_and_a_cut_short_seal_counts_once(tmp_path: Path) -> None:
    store = _store(tmp_path, ["a", "b"])
    store.seal("rollouts")
    store.commit("rollouts", "c", Rollout(task_id="c", status="done"))
    assert store.done("rollouts") == {"a", "b", "c"}
    (store.path("units", "rollouts") / "a.json").write_text(
        Rollout(task_id="a", status="done").to_json()
    )  # sealed, not yet removed
    assert [u for u, _ in store.iter_units("rollouts", Rollout)] == ["a", "b", "c"]  # id order, a once
    assert store.seal("rollouts") == 1  # only c is new; a's loose copy goes
    assert sorted(os.listdir(store.path("units", "rollouts"))) == [SEALED]
    assert len(os.listdir(store.path("units", "rollouts", SEALED))) == 2
    assert sorted(u for u, _ in RunStore(store.root).iter_units("rollouts", Rollout)) == ["a", "b", "c"]


def test_forget_takes_units_out_of_loose_files_and_shards_so_a_rerun_makes_them_again(tmp_path: Path) -> None:
    store = _store(tmp_path, ["a", "b", "c"])
    store.seal("rollouts")
    store.commit("rollouts", "d", Rollout(task_id="d", status="done"))
    assert store.forget("rollouts", ["b", "d", "never"]) == 2
    fresh = RunStore(store.root)
    assert fresh.done("rollouts") == {"a", "c"}
    fresh.commit("rollouts", "b", Rollout(task_id="b", status="failed"))  # made again, published once
    assert fresh.load_unit("rollouts", "b", Rollout).status == "failed"
    with pytest.raises(UnitExists):
        fresh.commit("rollouts", "b", Rollout(task_id="b", status="done"))


def test_many_seals_merge_into_one_shard_and_a_cut_short_merge_reads_each_unit_once(tmp_path: Path) -> None:
    store = _store(tmp_path, [])
    for i in range(10):  # a run resumed ten times, a unit each
        store.commit("rollouts", f"u{i}", Rollout(task_id=f"u{i}", status="done"))
        store.seal("rollouts")
    shards = os.listdir(store.path("units", "rollouts", SEALED))
    assert len(shards) <= 8
    assert sorted(u for u, _ in RunStore(store.root).iter_units("rollouts", Rollout)) == [f"u{i}" for i in range(10)]
    folder = store.path("units", "rollouts", SEALED)
    only = sorted(os.listdir(folder))[-1]
    (folder / f"0-copy-{only}").write_bytes((folder / only).read_bytes())  # a merge that died before the old went
    assert [u for u, _ in RunStore(store.root).iter_units("rollouts", Rollout)].count("u0") == 1
