"""A simulated vLLM fleet in a process of its own: `simulated_fleet(n)` starts n ReplicaSims (fakes.replica_sim) in one
child process, so that a benchmark's clients do not share the simulator's GIL, and controls them over a pipe."""

from __future__ import annotations

import multiprocessing as mp
import threading
from contextlib import ExitStack, contextmanager, suppress
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator

from fakes.replica_sim import ReplicaSim, SimSpec, SimStats


class SimFleet:
    """Replicas in the process simulated_fleet() started: each call waits for that process's answer."""

    def __init__(self, conn: Connection, urls: list[str]):
        self.urls = urls
        self._conn = conn
        self._lock = threading.Lock()  # one command at a time on the pipe

    def stats(self) -> list[SimStats]:
        return self._call("stats")

    def reset_stats(self) -> None:
        self._call("reset_stats")

    def stop(self, i: int) -> None:
        self._call("stop", i)

    def start(self, i: int) -> None:
        self._call("start", i)

    def _call(self, command: str, index: int | None = None) -> Any:
        with self._lock:
            self._conn.send((command, index))
            if not self._conn.poll(30):
                raise TimeoutError(f"the simulated fleet did not answer {command!r}")
            ok, answer = self._conn.recv()
        if not ok:
            raise RuntimeError(f"the simulated fleet failed {command!r}: {answer}")
        return answer


def _serve_fleet(n: int, spec: SimSpec, model: str, conn: Connection) -> None:
    with ExitStack() as stack:
        replicas = [stack.enter_context(ReplicaSim(spec, model)) for _ in range(n)]
        commands: dict[str, Callable[[Any], Any]] = {
            "stats": lambda _: [r.stats() for r in replicas],
            "reset_stats": lambda _: [r.reset_stats() for r in replicas],
            "stop": lambda i: replicas[i].stop(),
            "start": lambda i: replicas[i].start(),
        }
        conn.send([r.url for r in replicas])
        while True:
            try:
                command, index = conn.recv()
            except EOFError:  # the parent is gone
                return
            if command == "close":
                return
            try:
                conn.send((True, commands[command](index)))
            except Exception as e:
                conn.send((False, repr(e)))


@contextmanager
def simulated_fleet(n: int, spec: SimSpec | None = None, model: str = "sim") -> Iterator[SimFleet]:
    """`n` replicas (of `spec`, by default SimSpec()) in one child process."""
    conn, child_conn = mp.Pipe()
    process = mp.Process(
        target=_serve_fleet, args=(n, spec or SimSpec(), model, child_conn), daemon=True, name="replica-sim-fleet"
    )
    process.start()
    child_conn.close()  # the child's death then reads as EOF here
    try:
        if not conn.poll(30):
            raise TimeoutError("the simulated fleet did not come up")
        yield SimFleet(conn, conn.recv())
    finally:
        with suppress(OSError):
            conn.send(("close", None))
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
