"""search_papers, get_paper_authors, get_scholar_details: local PDF metadata, arXiv and Semantic Scholar on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from agents.config import ToolsConfig
from agents.research.index import CorpusIndex
from agents.research.papers import arxiv_id
from fakes.http_server import ScriptedAnswer, ScriptedServer
from tests.agents.research.helpers import Call, pointed_at, response


def test_metadata_is_read_from_the_first_pages(corpus_path: Path) -> None:
    index = CorpusIndex(corpus_path)
    attention = index.paper("1706.03762")
    assert attention.title == "Attention Is All You Need" and attention.year == 2017
    assert attention.authors[:3] == ("Ashish Vaswani", "Noam Shazeer", "Niki Parmar")
    assert attention.abstract.startswith("The dominant sequence transduction models")
    resnet = index.paper("arxiv_1512.03385")
    assert resnet.authors == ("Kaiming He", "Xiangyu Zhang", "Shaoqing Ren", "Jian Sun")
    assert index.paper("edu_zh_thu-numerical-analysis-notes").title == "数值分析"


async def test_offline_paper_chain(call: Call) -> None:
    papers = await call("search_papers", query="deep residual learning image recognition", max_results=3)
    assert papers.text.splitlines()[1] == "1. Deep Residual Learning for Image Recognition (2015)"
    assert "id: arxiv_1512.03385 | corpus://arxiv_1512.03385" in papers.text
    authors = await call("get_paper_authors", paper_id="arxiv_1512.03385")
    assert "1. Kaiming He | author_id: kaiming-he" in authors.text
    scholar = await call("get_scholar_details", author_id="kaiming-he")
    assert (
        scholar.text.startswith("Kaiming He (author_id: kaiming-he)")
        and "- Deep Residual Learning for Image Recognition (2015)" in scholar.text
    )
    zh = await call("search_papers", query="编译原理")
    assert "1. 编译原理 (2018)" in zh.text


async def test_offline_unknown_ids_are_errors(call: Call) -> None:
    assert (await call("get_paper_authors", paper_id="9999.99999")).is_error
    unknown = await call("get_scholar_details", author_id="nobody-at-all")
    assert unknown.is_error and "get_paper_authors" in unknown.text


@pytest.mark.parametrize(
    "raw", ["1706.03762", "1706.03762v7", "arXiv:1706.03762", "arxiv_1706.03762", "https://arxiv.org/pdf/1706.03762v2.pdf"]
)
def test_arxiv_ids_are_recognised(raw: str) -> None:
    assert arxiv_id(raw) == "1706.03762"


async def test_arxiv_backend(server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]) -> None:
    server.on("/api/query", ScriptedAnswer(response("arxiv_search.xml"), content_type="application/atom+xml"))
    call = research_call(pointed_at(tools_config, server.url, paper_backend="arxiv"))
    papers = await call("search_papers", query="attention is all you need", max_results=2)
    assert not papers.is_error, papers.text
    assert (
        "1. Attention Is All You Need (2017)" in papers.text
        and "id: 1706.03762 | http://arxiv.org/abs/1706.03762v7" in papers.text
    )
    assert "2. Is Attention All We Need? A Second Look (2025)" in papers.text
    assert server.requests[0].query["search_query"] == "all:attention AND all:need"
    authors = await call("get_paper_authors", paper_id="1706.03762")
    assert "1. Ashish Vaswani (Google Brain) | author_id: Ashish Vaswani" in authors.text
    assert server.requests[1].query["id_list"] == "1706.03762"
    scholar = await call("get_scholar_details", author_id="Ashish Vaswani")
    assert "papers: 1432" in scholar.text and server.requests[2].query["search_query"] == 'au:"Ashish Vaswani"'


async def test_arxiv_errors(server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]) -> None:
    server.on("/api/query", ScriptedAnswer(response("arxiv_error.xml")), ScriptedAnswer("<html>busy</html", 503))
    call = research_call(pointed_at(tools_config, server.url, paper_backend="arxiv", http_retries=0))
    refused = await call("search_papers", query="x")
    assert refused.is_error and "incorrect id format" in refused.text
    assert "not an arXiv id" in (await call("get_paper_authors", paper_id="some-s2-id")).text
    busy = await call("search_papers", query="y")
    assert busy.is_error and "arxiv: HTTP 503" in busy.text


async def test_semantic_scholar_backend(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/graph/v1/paper/search", ScriptedAnswer(response("s2_search.json")))
    server.on("/graph/v1/paper/arXiv:1706.03762/authors", ScriptedAnswer(response("s2_authors.json")))
    server.on(
        "/graph/v1/author/40348417",
        ScriptedAnswer({"message": "Too Many Requests"}, 429, {"Retry-After": "0"}),
        ScriptedAnswer(response("s2_author.json")),
    )
    call = research_call(pointed_at(tools_config, server.url, paper_backend="semantic_scholar"))
    papers = await call("search_papers", query="attention transformer", max_results=2)
    assert "1. Attention is All you Need (2017)" in papers.text and "id: 204e3073870fae3d05bcbc2f6a8e263d9b72e776" in papers.text
    assert server.requests[0].headers["x-api-key"] == "key-semantic_scholar"
    authors = await call("get_paper_authors", paper_id="arxiv_1706.03762")
    assert "2. Noam M. Shazeer (Google) | author_id: 1846258" in authors.text
    scholar = await call("get_scholar_details", author_id="40348417")
    assert not scholar.is_error, scholar.text
    assert "h-index: 20" in scholar.text and "citations: 160000" in scholar.text and "affiliations: Essential AI" in scholar.text
    assert scholar.text.index("Image Transformer (2018)") < scholar.text.index("Attention is All you Need (2017)")
