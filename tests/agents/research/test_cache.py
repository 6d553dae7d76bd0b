"""The tool cache: record then replay reproduces observations byte for byte with no service or index; a miss is an error."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest

from agents.config import ToolsConfig
from agents.research.cache import CacheMiss, ToolCache, cache_key
from agents.research.runtime import build_research
from fakes.http_server import ScriptedAnswer, ScriptedServer
from tests.agents.research.helpers import Call, pointed_at, response

CALLS = [
    ("search_web", {"query": "transformer attention", "max_results": 2}),
    ("fetch_url", {"url": "corpus://arxiv_1810.04805"}),
    ("search_papers", {"query": "human feedback instructions"}),
    ("get_paper_authors", {"paper_id": "arxiv_2203.02155"}),
    ("get_scholar_details", {"author_id": "long-ouyang"}),
    ("search_images", {"query": "数值 分析 图"}),
]


def test_keys_ignore_argument_order_spacing_width_and_unset_values() -> None:
    key = cache_key("search_web", "offline", {"query": "数值分析  error", "max_results": 5})
    assert key == cache_key("search_web", "offline", {"max_results": 5, "query": " 数值分析 error ", "time_range": None})
    assert key == cache_key("search_web", "offline", {"query": "数值分析 ｅｒｒｏｒ", "max_results": 5})  # full-width letters
    assert key != cache_key("search_web", "searxng", {"query": "数值分析 error", "max_results": 5})
    assert key != cache_key("search_web", "offline", {"query": "数值分析 error", "max_results": 6})


async def test_replay_gives_identical_observations_offline(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call], tmp_path: Path
) -> None:
    server.on("/search", ScriptedAnswer(response("searxng.json")))
    recording = pointed_at(tools_config, server.url, search_backend="searxng", cache="record")
    recorder = build_research(recording, tmp_path)
    call = research_call(research=recorder)
    recorded = [await call(name, **args) for name, args in CALLS]
    assert not any(o.is_error for o in recorded), [o.text for o in recorded if o.is_error]
    assert recorder.cache.stats()["misses"] == len(CALLS) and "hits" not in recorder.cache.stats()

    again_call = research_call(research=recorder, root=tmp_path / "again")  # a fresh workspace, as a rerun has
    again = [await again_call(name, **args) for name, args in CALLS]
    assert again == recorded and recorder.cache.stats()["hits"] == len(CALLS)
    assert len(server.requests) == 1  # the second round came from the cache

    (tmp_path / "not-an-index.db").write_bytes(b"")  # opening it would fail: replay must not need the index
    replaying = replace(
        pointed_at(tools_config, "http://127.0.0.1:9", search_backend="searxng", cache="replay"),
        corpus_index=str(tmp_path / "not-an-index.db"),
    )
    replayer = build_research(replaying, tmp_path)
    replay = research_call(research=replayer, root=tmp_path / "replay")
    replayed = [await replay(name, **args) for name, args in CALLS]
    assert [o.text for o in replayed] == [o.text for o in recorded]
    assert replayer.cache.stats() == {"hits": len(CALLS), **{f"hits.{name}": n for name, n in _counts(CALLS).items()}}

    miss = await replay("search_web", query="never recorded")
    assert miss.is_error and "no recorded result for search_web" in miss.text
    assert replayer.cache.stats()["misses"] == 1


def _counts(calls: list[tuple[str, dict]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, _ in calls:
        counts[name] = counts.get(name, 0) + 1
    return counts


async def test_failures_are_not_recorded(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call], tmp_path: Path
) -> None:
    server.on("/search", ScriptedAnswer("down", 503), ScriptedAnswer(response("searxng.json")))
    call = research_call(pointed_at(tools_config, server.url, search_backend="searxng", http_retries=0))
    assert (await call("search_web", query="q")).is_error
    assert not (await call("search_web", query="q")).is_error  # asked again, not served a recorded failure


async def test_off_mode_neither_reads_nor_writes(tmp_path: Path) -> None:
    cache = ToolCache(tmp_path / "c", "off")
    calls = []

    async def produce() -> list[int]:
        calls.append(1)
        return [1]

    assert await cache.get("t", "b", {}, produce) == [1] and await cache.get("t", "b", {}, produce) == [1]
    assert len(calls) == 2 and not (tmp_path / "c").exists() and cache.stats() == {}
    with pytest.raises(CacheMiss):
        await ToolCache(tmp_path / "c", "replay").get("t", "b", {}, produce)
