"""How a rollout worker process is tuned once it has started: where its CPU-bound steps run, and
its garbage collector. Both chosen by measurement (benchmarks/README.md)."""

from __future__ import annotations

import asyncio
import gc
import socket
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

GC_THRESHOLD = 20_000  # allocations between young-generation collections (CPython's default: 700)


def bound_threads(threads: int) -> None:
    """Run the rollouts' `asyncio.to_thread` steps (pixel checks, PDF and PPTX export) on `threads`
    threads, or with 0 on the event loop itself.

    They are CPU-bound and mostly hold the GIL, so threads only take turns on it with the loop. On 2
    CPUs (2 workers, interleaved runs): one thread per worker spent 5-6% less machine CPU per rollout
    than asyncio's default pool (CPUs + 4 threads) at 32 rollouts in flight; none (the loop waits for
    each step, ~12 ms per slide's pixel checks, ~19 ms per PPTX) 5-8% more rollouts per hour than one
    at 32 in flight (7 of 8 pairs), the same at 1 and 64, 2% fewer at 8. The other worker and the
    browsers keep the CPUs busy meanwhile; a lone process does not: the render capacity of one
    process with one browser is best with the default pool."""
    executor = _InlineExecutor() if threads == 0 else ThreadPoolExecutor(threads, thread_name_prefix="rollout-cpu")
    asyncio.get_running_loop().set_default_executor(executor)


# What asyncio itself hands its default executor to wait on the network (`loop.getaddrinfo`, e.g. aiohttp's
# resolver and the download tool's address check): a slow DNS server would stall every rollout of the worker.
_BLOCKING_IO = (socket.getaddrinfo, socket.getnameinfo)


class _InlineExecutor(ThreadPoolExecutor):
    """Runs each call at once in the submitting thread (asyncio takes only a ThreadPoolExecutor as its
    default executor), except the name lookups of `_BLOCKING_IO`, which get a thread. Installed as the
    default executor, it makes every `asyncio.to_thread` of the worker (renderer, deck export) run on
    the event loop: those calls block it, by choice (see `bound_threads`)."""

    def __init__(self) -> None:
        super().__init__(2, thread_name_prefix="rollout-lookup")

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        if fn in _BLOCKING_IO:
            return super().submit(fn, *args, **kwargs)
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - as a pool thread would: the caller gets it from the future
            future.set_exception(exc)
        return future


def settle_gc() -> None:
    """Keep the cyclic GC off the long-lived heap of a started worker and collect less often.

    Measured at 32 rollouts in flight (2 workers): full collections of ~150 ms each (the event
    loop stalls meanwhile) and ~14 ms of collector time per rollout; frozen and with a larger
    first generation, ~40% of that. Rollouts allocate mostly acyclic data freed by refcount."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD)
