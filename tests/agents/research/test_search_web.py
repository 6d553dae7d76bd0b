"""search_web: the offline corpus (English and Chinese) and the SearXNG, Tavily and Brave backends on a loopback server."""

from __future__ import annotations

from typing import Callable

import pytest

from agents.config import ToolsConfig
from fakes.http_server import ScriptedAnswer, ScriptedServer
from tests.agents.research.helpers import Call, pointed_at, response


async def test_offline_search_finds_the_english_paper_first(call: Call) -> None:
    obs = await call("search_web", query="attention is all you need")
    assert not obs.is_error, obs.text
    first = obs.text.split("\n2.")[0]
    assert "corpus://arxiv_1706.03762" in first and "Attention Is All You Need" in first


@pytest.mark.parametrize(
    ("query", "doc_id", "term"),
    [
        ("数值分析", "edu_zh_thu-numerical-analysis-notes", "数值分析"),
        ("绝对误差", "edu_zh_thu-numerical-analysis-notes", "绝对误差"),
        ("语法分析", "edu_zh_thu-compiler-principles-notes", "语法分析"),
        ("傅里叶变换", "edu_zh_hit-signals-systems-ch3-frequency-domain", "傅里叶"),
    ],
)
async def test_offline_search_finds_chinese_terms(call: Call, query: str, doc_id: str, term: str) -> None:
    obs = await call("search_web", query=query, max_results=3)
    first = obs.text.split("\n2.")[0]
    assert f"corpus://{doc_id}" in first, obs.text
    assert term in first  # the snippet comes from a passage holding the term


async def test_offline_search_lists_each_document_once_and_says_when_nothing_matches(call: Call) -> None:
    obs = await call("search_web", query="neural network training", max_results=10)
    urls = [line.split(" | ")[0].strip() for line in obs.text.splitlines() if line.strip().startswith("corpus://")]
    assert len(urls) == len(set(urls)) > 3
    assert "No results" in (await call("search_web", query="zzyzx qwxv")).text


async def test_searxng_backend(server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]) -> None:
    server.on("/search", ScriptedAnswer(response("searxng.json")))
    call = research_call(pointed_at(tools_config, server.url, search_backend="searxng"))
    obs = await call("search_web", query="transformer attention", max_results=2, time_range="year")
    assert not obs.is_error, obs.text
    assert "1. Transformer (deep learning architecture) - Wikipedia" in obs.text
    assert "multi-head attention mechanism & ..." in obs.text  # tags and entities removed
    assert "https://arxiv.org/abs/1706.03762 | 2017-06-12" in obs.text
    assert "Illustrated" not in obs.text  # max_results
    (seen,) = server.seen("/search")
    assert seen.query == {"q": "transformer attention", "format": "json", "pageno": "1", "time_range": "year"}


async def test_tavily_backend_sends_the_key_and_the_query(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/search", ScriptedAnswer(response("tavily.json")))
    call = research_call(pointed_at(tools_config, server.url, search_backend="tavily"))
    obs = await call("search_web", query="数值分析 误差", max_results=2)
    assert "数值分析 - 维基百科" in obs.text and "https://en.wikipedia.org/wiki/Numerical_analysis | 2024-05-01" in obs.text
    (seen,) = server.seen("/search")
    assert seen.method == "POST" and seen.headers["Authorization"] == "Bearer key-tavily"
    assert seen.json() == {"query": "数值分析 误差", "max_results": 2, "search_depth": "basic"}


async def test_brave_backend_maps_the_time_range(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/res/v1/web/search", ScriptedAnswer(response("brave.json")))
    call = research_call(pointed_at(tools_config, server.url, search_backend="brave"))
    obs = await call("search_web", query="residual networks", time_range="month")
    assert "1. Deep Residual Learning for Image Recognition" in obs.text and "<strong>" not in obs.text
    (seen,) = server.seen("/res/v1/web/search")
    assert seen.query["freshness"] == "pm" and seen.headers["X-Subscription-Token"] == "key-brave"


async def test_rate_limit_is_retried_then_succeeds(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on(
        "/search", ScriptedAnswer({"detail": "slow down"}, 429, {"Retry-After": "0"}), ScriptedAnswer(response("searxng.json"))
    )
    call = research_call(pointed_at(tools_config, server.url, search_backend="searxng"))
    obs = await call("search_web", query="transformer attention")
    assert not obs.is_error and len(server.seen("/search")) == 2


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (ScriptedAnswer({"detail": "slow down"}, 429, {"Retry-After": "0"}), "rate limited (HTTP 429)"),
        (ScriptedAnswer("upstream exploded", 500), "HTTP 500 Internal Server Error for search 'q': upstream exploded"),
        (ScriptedAnswer("not json at all", 200), "is not JSON"),
        (ScriptedAnswer({"error": "bad key"}, 401), "HTTP 401"),
    ],
)
async def test_service_failures_are_error_observations(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call], answer: ScriptedAnswer, message: str
) -> None:
    server.on("/search", answer)
    call = research_call(pointed_at(tools_config, server.url, search_backend="searxng"))
    obs = await call("search_web", query="q")
    assert obs.is_error and message in obs.text
    assert len(server.seen("/search")) == (1 + tools_config.http_retries if answer.status >= 429 else 1)


async def test_unreachable_service_is_an_error_observation(tools_config: ToolsConfig, research_call: Callable[..., Call]) -> None:
    call = research_call(pointed_at(tools_config, "http://127.0.0.1:9", search_backend="searxng", http_retries=0))
    obs = await call("search_web", query="q")
    assert obs.is_error and "searxng: cannot reach http://127.0.0.1:9" in obs.text
