"""Paper backends for search_papers, get_paper_authors and get_scholar_details.

`arxiv`: the arXiv API (Atom XML). arXiv has no author ids, so an author's id is
their name, and their details are their arXiv papers. `semantic_scholar`: the
Semantic Scholar graph API (JSON), with real author ids, h-index and citations.
`offline`: the paper metadata of the local corpus (title, authors, abstract and
year read from each PDF's first page); an author's id is their name in lower case
joined by '-'.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any, Optional

from agents.research.backends import ResearchBackend
from agents.research.http import get_json, request
from agents.research.index import CorpusError
from agents.research.terms import STOPWORDS
from agents.tools.registry import ToolError
from core.protocols import PaperBackend
from core.seams.research import Author, Paper, Scholar

if TYPE_CHECKING:
    from agents.research.runtime import Research

SCHOLAR_PAPERS = 10
_ATOM = {
    "a": "http://www.w3.org/2005/Atom",
    "arxiv": "http://arxiv.org/schemas/atom",
    "os": "http://a9.com/-/spec/opensearch/1.1/",
}
_ARXIV_ID = re.compile(
    r"(?:arxiv[:_]|https?://(?:export\.)?arxiv\.org/(?:abs|pdf)/)?(?P<id>\d{4}\.\d{4,5}|[a-z\-]+(?:\.[a-z]{2})?/\d{7})(?:v\d+)?(?:\.pdf)?",
    re.IGNORECASE,
)


def arxiv_id(paper_id: str) -> Optional[str]:
    """The bare arXiv id in '1706.03762v7', 'arXiv:1706.03762', 'arxiv_1706.03762' or an arXiv URL; None otherwise."""
    m = _ARXIV_ID.fullmatch(paper_id.strip())
    return m.group("id") if m else None


def _year(date: Optional[str]) -> Optional[int]:
    return int(date[:4]) if date and date[:4].isdigit() else None


# ---------------------------------------------------------------- offline


class OfflinePapers:
    async def search(self, research: Research, query: str, max_results: int) -> list[Paper]:
        return (await research.corpus()).search_papers(query, max_results)

    async def authors(self, research: Research, paper_id: str) -> list[Author]:
        try:
            return (await research.corpus()).authors(paper_id)
        except CorpusError as exc:
            raise ToolError(f"{exc}; use an id that search_papers returned") from exc

    async def scholar(self, research: Research, author_id: str) -> Scholar:
        try:
            return (await research.corpus()).scholar(author_id)
        except CorpusError as exc:
            raise ToolError(f"{exc}; use an author_id that get_paper_authors returned") from exc


# ---------------------------------------------------------------- arXiv


def _text(node: ET.Element, path: str) -> str:
    return " ".join((node.findtext(path, default="", namespaces=_ATOM) or "").split())


def _arxiv_entries(xml: str, what: str) -> tuple[list[ET.Element], int]:
    try:
        feed = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ToolError(f"arxiv: the answer to {what} is not Atom XML ({exc})") from exc
    entries = feed.findall("a:entry", _ATOM)
    for entry in entries:
        if "/api/errors" in _text(entry, "a:id"):
            raise ToolError(f"arxiv: {what} was refused: {_text(entry, 'a:summary')}")
    total = _text(feed, "os:totalResults")
    return entries, int(total) if total.isdigit() else len(entries)


def _arxiv_paper(entry: ET.Element) -> Paper:
    url = _text(entry, "a:id")
    authors = tuple(_text(a, "a:name") for a in entry.findall("a:author", _ATOM))
    return Paper(
        arxiv_id(url) or url, _text(entry, "a:title"), authors, _year(_text(entry, "a:published")), _text(entry, "a:summary"), url
    )


class ArxivPapers:
    async def _query(self, research: Research, what: str, params: dict[str, Any]) -> tuple[list[ET.Element], int]:
        response = await request(research.service("arxiv"), "GET", "/api/query", what, params=params)
        return _arxiv_entries(response.text, what)

    async def search(self, research: Research, query: str, max_results: int) -> list[Paper]:
        words = [w for w in re.findall(r"[^\W_]+", query) if w.casefold() not in STOPWORDS] or query.split()
        params = {
            "search_query": " AND ".join(f"all:{w}" for w in words),
            "start": 0,
            "max_results": max_results,
            "sortBy": "relevance",
        }
        entries, _ = await self._query(research, f"search {query!r}", params)
        return [_arxiv_paper(e) for e in entries]

    async def authors(self, research: Research, paper_id: str) -> list[Author]:
        bare = arxiv_id(paper_id)
        if bare is None:
            raise ToolError(f"{paper_id!r} is not an arXiv id (like 1706.03762); use an id that search_papers returned")
        entries, _ = await self._query(research, f"paper {bare}", {"id_list": bare, "max_results": 1})
        if not entries:
            raise ToolError(f"arxiv: no paper {bare}")
        authors = entries[0].findall("a:author", _ATOM)
        return [
            Author(_text(a, "a:name"), _text(a, "a:name"), tuple(_text(x, ".") for x in a.findall("arxiv:affiliation", _ATOM)))
            for a in authors
        ]

    async def scholar(self, research: Research, author_id: str) -> Scholar:
        name = " ".join(author_id.split())
        params = {
            "search_query": f'au:"{name}"',
            "start": 0,
            "max_results": SCHOLAR_PAPERS,
            "sortBy": "submittedDate",
            "sortOrder": "descending",
        }
        entries, total = await self._query(research, f"author {name!r}", params)
        if not entries:
            raise ToolError(f"arxiv: no papers by {name!r}")
        papers = tuple((p.title, p.year) for p in map(_arxiv_paper, entries))
        return Scholar(name, name, (), total, None, None, papers)


# ---------------------------------------------------------------- Semantic Scholar


def _s2_id(paper_id: str) -> str:
    """Semantic Scholar accepts its own ids and prefixed external ids; a bare arXiv id gets its prefix."""
    bare = arxiv_id(paper_id)
    return f"arXiv:{bare}" if bare else paper_id.strip()


class SemanticScholarPapers:
    async def _get(self, research: Research, path: str, what: str, params: dict[str, Any]) -> dict[str, Any]:
        service = research.service("semantic_scholar")
        return await get_json(service, f"/graph/v1/{path}", what, params=params, headers=service.auth("x-api-key", ""))

    async def search(self, research: Research, query: str, max_results: int) -> list[Paper]:
        params = {"query": query, "limit": max_results, "fields": "title,abstract,year,authors,url,externalIds"}
        data = await self._get(research, "paper/search", f"search {query!r}", params)
        return [
            Paper(
                p["paperId"],
                p.get("title") or "",
                tuple(a.get("name") or "" for a in p.get("authors") or []),
                p.get("year"),
                p.get("abstract") or "",
                p.get("url") or "",
            )
            for p in data.get("data") or []
            if isinstance(p, dict) and p.get("paperId")
        ]

    async def authors(self, research: Research, paper_id: str) -> list[Author]:
        data = await self._get(
            research,
            f"paper/{_s2_id(paper_id)}/authors",
            f"authors of {paper_id!r}",
            {"fields": "name,affiliations", "limit": 100},
        )
        return [
            Author(a["authorId"], a.get("name") or "", tuple(a.get("affiliations") or ()))
            for a in data.get("data") or []
            if isinstance(a, dict) and a.get("authorId")
        ]

    async def scholar(self, research: Research, author_id: str) -> Scholar:
        fields = "name,affiliations,homepage,paperCount,citationCount,hIndex,papers.title,papers.year"
        a = await self._get(research, f"author/{author_id.strip()}", f"author {author_id!r}", {"fields": fields})
        papers = sorted(((p.get("title") or "", p.get("year")) for p in a.get("papers") or []), key=lambda p: -(p[1] or 0))
        return Scholar(
            str(a.get("authorId") or author_id),
            a.get("name") or "",
            tuple(a.get("affiliations") or ()),
            a.get("paperCount"),
            a.get("citationCount"),
            a.get("hIndex"),
            tuple(papers[:SCHOLAR_PAPERS]),
            a.get("homepage"),
        )


PAPERS: dict[str, ResearchBackend[PaperBackend[Research]]] = {
    "offline": ResearchBackend(OfflinePapers()),
    "arxiv": ResearchBackend(ArxivPapers()),
    "semantic_scholar": ResearchBackend(SemanticScholarPapers()),
}
