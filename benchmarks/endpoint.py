"""The fake OpenAI server in its own process, so a benchmark's client does not share its GIL."""

from __future__ import annotations

import multiprocessing as mp
from contextlib import contextmanager
from multiprocessing.synchronize import Event
from typing import Iterator

from fakes.openai_server import FakeOpenAIServer, Reply


def _serve(reply: Reply, latency_s: float, urls: mp.Queue, stop: Event) -> None:
    with FakeOpenAIServer(lambda _: reply, latency_s=latency_s, keep_requests=False) as srv:
        urls.put(srv.url)
        stop.wait()


@contextmanager
def fake_endpoint(reply: Reply, latency_s: float = 0.0) -> Iterator[str]:
    """The base URL of a fake server answering every request with `reply` after `latency_s`."""
    urls: mp.Queue = mp.Queue()
    stop = mp.Event()
    server = mp.Process(target=_serve, args=(reply, latency_s, urls, stop), daemon=True)
    server.start()
    try:
        yield urls.get(timeout=30)
    finally:
        stop.set()
        server.join(timeout=10)


def percentile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]
