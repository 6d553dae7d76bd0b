"""search_web backends: SearXNG (self-hosted), Tavily and Brave over HTTP; `offline` searches the local corpus.

Each backend is `async (research, query, max_results, time_range) -> [SearchHit]`,
listed in `SEARCH` under the name `tools.search_backend` picks.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Awaitable, Callable, Literal, Optional

from agents.research.backends import ResearchBackend
from agents.research.http import get_json, post_json
from agents.tools.registry import ToolError
from core.seams.research import SearchHit

if TYPE_CHECKING:
    from agents.research.runtime import Research

TimeRange = Literal["day", "week", "month", "year"]
SearchBackend = Callable[["Research", str, int, Optional[str]], Awaitable[list[SearchHit]]]

SNIPPET_CHARS = 400
_TAG = re.compile(r"<[^>]+>")
_BRAVE_FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}


def plain(text: Optional[str], limit: int = SNIPPET_CHARS) -> str:
    """Text with HTML tags and entities removed, whitespace collapsed, cut at `limit` characters."""
    text = " ".join(html.unescape(_TAG.sub("", text or "")).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def _hits(items: list, title: str, url: str, snippet: str, published: str, max_results: int) -> list[SearchHit]:
    if not isinstance(items, list):
        raise ToolError(f"unexpected search answer: results are a {type(items).__name__}, not a list")
    return [
        SearchHit(plain(item.get(title), 200) or item[url], item[url], plain(item.get(snippet)), item.get(published) or None)
        for item in items[:max_results]
        if isinstance(item, dict) and item.get(url)
    ]


async def search_offline(research: Research, query: str, max_results: int, time_range: Optional[str]) -> list[SearchHit]:
    return (await research.corpus()).search(query, max_results)


async def search_searxng(research: Research, query: str, max_results: int, time_range: Optional[str]) -> list[SearchHit]:
    params = {"q": query, "format": "json", "pageno": 1} | ({"time_range": time_range} if time_range else {})
    data = await get_json(research.service("searxng"), "/search", f"search {query!r}", params=params)
    return _hits(data.get("results", []), "title", "url", "content", "publishedDate", max_results)


async def search_tavily(research: Research, query: str, max_results: int, time_range: Optional[str]) -> list[SearchHit]:
    service = research.service("tavily")
    body = {"query": query, "max_results": max_results, "search_depth": "basic"} | (
        {"time_range": time_range} if time_range else {}
    )
    data = await post_json(service, "/search", f"search {query!r}", json=body, headers=service.auth())
    return _hits(data.get("results", []), "title", "url", "content", "published_date", max_results)


async def search_brave(research: Research, query: str, max_results: int, time_range: Optional[str]) -> list[SearchHit]:
    service = research.service("brave")
    params = {"q": query, "count": max_results} | ({"freshness": _BRAVE_FRESHNESS[time_range]} if time_range else {})
    headers = {"Accept": "application/json"} | service.auth("X-Subscription-Token", "")
    data = await get_json(service, "/res/v1/web/search", f"search {query!r}", params=params, headers=headers)
    return _hits((data.get("web") or {}).get("results", []), "title", "url", "description", "page_age", max_results)


SEARCH: dict[str, ResearchBackend[SearchBackend]] = {
    "offline": ResearchBackend(search_offline),
    "searxng": ResearchBackend(search_searxng),
    "tavily": ResearchBackend(search_tavily, key_of="tavily"),
    "brave": ResearchBackend(search_brave, key_of="brave"),
}
