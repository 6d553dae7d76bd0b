"""The run store: atomic writes that survive a crash, units written exactly once, resume."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from core.records import Verdict, read_parquet
from core.run.store import ConfigMismatch, RunStore, UnitExists, atomic_write_text

CONFIG = {"run": {"name": "t"}, "llm": {"model": "m", "max_concurrency": 4}}


def spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_crash_mid_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    atomic_write_text(target, "old\n")
    # The child writes the new content, then "crashes" (SIGKILL) inside fsync, before publishing.
    child = spawn(
        """
        import os, sys, time
        from pathlib import Path
        from core.run import store
        real_fsync = os.fsync
        def stall(fd):
            real_fsync(fd)
            print("written", file=sys.stderr, flush=True)
            time.sleep(60)
        store.os.fsync = stall
        store.atomic_write_text(Path(sys.argv[1]), "new\\n" * 100000)
        """,
        str(target),
    )
    assert child.stderr.readline().strip() == "written"
    temps = list(tmp_path.glob(".config.yaml.*.tmp"))
    assert temps and temps[0].stat().st_size > 0  # the new bytes are on disk, unpublished
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert target.read_text() == "old\n"
    assert RunStore(tmp_path).clean_temp_files() == 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_units_are_published_exactly_once(tmp_path: Path) -> None:
    store = RunStore.open(tmp_path / "run", CONFIG)
    verdict = Verdict(task_id="a", gate="constraint", passed=True)
    results: list[str] = []

    def publish() -> None:
        try:
            store.commit("filters", "a", verdict)
            results.append("ok")
        except UnitExists:
            results.append("exists")

    threads = [threading.Thread(target=publish) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["exists"] * 7 + ["ok"]
    assert store.load("filters", Verdict) == [verdict]
    with pytest.raises(ValueError, match="plain file name"):
        store.commit("filters", "../escape", verdict)


WORKER = """
import sys, time
from pathlib import Path
from core.records import Verdict
from core.run.store import RunStore
store = RunStore.open(Path(sys.argv[1]), {"run": {"name": "t"}})
todo = [f"task-{i:03d}" for i in range(int(sys.argv[2])) if f"task-{i:03d}" not in store.done("filters")]
for unit in todo:
    time.sleep(0.01)  # the work of one unit
    store.commit("filters", unit, Verdict(task_id=unit, gate="constraint", passed=True, reasons=("x" * 5000,)))
"""


def test_resume_after_random_kills_finishes_every_unit_once(tmp_path: Path) -> None:
    root, n = tmp_path / "run", 120
    rng = random.Random(7)
    for _ in range(4):  # kill the worker at random points, then rerun
        start = len(RunStore(root).done("filters"))
        child = spawn(WORKER, str(root), str(n))
        goal = start + rng.randint(3, 20)
        wait_for(lambda goal=goal: len(RunStore(root).done("filters")) >= goal)
        time.sleep(rng.uniform(0, 0.01))
        child.send_signal(signal.SIGKILL)
        child.wait()
    before = RunStore(root).done("filters")
    assert 0 < len(before) < n, "the kills should land mid-run"
    child = spawn(WORKER, str(root), str(n))
    assert child.wait() == 0, child.stderr.read()  # a second commit of a unit would raise UnitExists
    store = RunStore(root)
    assert store.done("filters") == {f"task-{i:03d}" for i in range(n)}
    rows = read_parquet(store.compact("filters", Verdict), Verdict)
    assert sorted(r.task_id for r in rows) == sorted(store.done("filters"))


def test_config_change_is_refused_unless_forced(tmp_path: Path) -> None:
    RunStore.open(tmp_path, CONFIG)
    RunStore.open(tmp_path, CONFIG | {"llm": {"model": "m", "max_concurrency": 64}})  # performance only
    with pytest.raises(ConfigMismatch, match="run.resume=force"):
        RunStore.open(tmp_path, CONFIG | {"llm": {"model": "other"}})
    forced = RunStore.open(tmp_path, CONFIG | {"llm": {"model": "other"}}, force=True)
    assert "other" in (forced.root / "config.yaml").read_text()


def test_unreadable_unit_is_a_clear_error(tmp_path: Path) -> None:
    store = RunStore.open(tmp_path, CONFIG)
    (tmp_path / "units" / "filters").mkdir(parents=True)
    (tmp_path / "units" / "filters" / "bad.json").write_text("{not json")
    with pytest.raises(Exception, match="bad.json"):
        store.load("filters", Verdict)
    assert os.path.exists(tmp_path / "config.hash")
