"""fetch_url: corpus:// documents offline, web pages and PDFs from a loopback server, and the address rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from agents.config import SandboxConfig, ToolsConfig
from fakes.http_server import ScriptedAnswer, ScriptedServer
from tests.agents.research.helpers import Call

ARTICLE = """<!DOCTYPE html><html><head><title>Numerical analysis</title><script>var tracking = 1;</script></head>
<body><nav>Home | About | Contact</nav><article><h1>Numerical analysis</h1>
<p>Numerical analysis is the study of algorithms that use numerical approximation for the problems of
mathematical analysis. It is widely used in engineering and the physical sciences.</p>
<p>Round-off error and truncation error are the two main kinds of error studied by the field, and
stability of an algorithm tells how errors propagate.</p><h2>History</h2>
<p>The field predates computers by many centuries; Newton and Gauss devised methods still taught today.</p>
</article><footer>Copyright 2024</footer></body></html>"""


def web(cfg: ToolsConfig, **sandbox: object) -> ToolsConfig:
    return replace(cfg, fetch_backend="web", sandbox=SandboxConfig(call_timeout_s=30, **sandbox))  # type: ignore[arg-type]


async def test_corpus_address_gives_the_document_with_page_markers(call: Call, workspace) -> None:
    obs = await call("fetch_url", url="corpus://edu_zh_thu-numerical-analysis-notes")
    assert not obs.is_error
    assert obs.text.startswith("# 数值分析") and "[page 5]" in obs.text
    whole = next((workspace.root / ".outputs").glob("fetch_url_*.txt")).read_text()
    assert "绝对误差" in whole and len(whole) > len(obs.text)  # the long page was saved whole


async def test_unknown_corpus_document_and_web_offline_are_errors(call: Call) -> None:
    missing = await call("fetch_url", url="corpus://no-such-doc")
    assert missing.is_error and "no such document" in missing.text
    offline = await call("fetch_url", url="https://example.org/")
    assert offline.is_error and "fetch_backend=offline" in offline.text


async def test_html_page_becomes_markdown_of_its_main_text(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/wiki/numerical", ScriptedAnswer(ARTICLE, content_type="text/html"))
    call = research_call(web(tools_config, allow_private_addresses=True))
    obs = await call("fetch_url", url=f"{server.url}/wiki/numerical")
    assert not obs.is_error, obs.text
    assert "Round-off error and truncation error" in obs.text and "History" in obs.text
    assert "var tracking" not in obs.text


async def test_pdf_is_converted_and_redirects_are_followed(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call], shared_data: Path
) -> None:
    server.on("/paper", ScriptedAnswer("", 302, {"Location": "/files/attention.pdf"}))
    server.on(
        "/files/attention.pdf",
        ScriptedAnswer((shared_data / "arxiv_1706.03762.pdf").read_bytes(), content_type="application/pdf"),
    )
    call = research_call(web(tools_config, allow_private_addresses=True))
    obs = await call("fetch_url", url=f"{server.url}/paper")
    assert not obs.is_error, obs.text
    assert f"redirected to {server.url}/files/attention.pdf" in obs.text and "Attention Is All You Need" in obs.text


async def test_binary_files_and_http_errors_are_error_observations(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/image", ScriptedAnswer(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", content_type="image/png"))
    server.on("/gone", ScriptedAnswer("gone", 404))
    call = research_call(web(tools_config, allow_private_addresses=True))
    binary = await call("fetch_url", url=f"{server.url}/image")
    assert binary.is_error and "download_file" in binary.text
    gone = await call("fetch_url", url=f"{server.url}/gone")
    assert gone.is_error and "HTTP 404" in gone.text


async def test_private_addresses_are_refused_before_any_request(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/wiki/numerical", ScriptedAnswer(ARTICLE, content_type="text/html"))
    call = research_call(web(tools_config))
    for url in (
        f"{server.url}/wiki/numerical",
        f"http://localhost:{server.port}/wiki/numerical",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
    ):
        obs = await call("fetch_url", url=url)
        assert obs.is_error and "refused" in obs.text, (url, obs.text)
    assert server.requests == []


async def test_page_size_is_capped(server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]) -> None:
    server.on("/big", ScriptedAnswer("x" * 5000, content_type="text/plain"))
    call = research_call(web(tools_config, allow_private_addresses=True, max_download_bytes=1000))
    obs = await call("fetch_url", url=f"{server.url}/big")
    assert obs.is_error and "download limit" in obs.text


async def test_every_redirect_hop_is_checked(
    server: ScriptedServer, tools_config: ToolsConfig, research_call: Callable[..., Call]
) -> None:
    server.on("/hop", ScriptedAnswer("", 302, {"Location": f"http://localhost:{server.port}/wiki/numerical"}))
    server.on("/wiki/numerical", ScriptedAnswer(ARTICLE, content_type="text/html"))
    call = research_call(web(tools_config, allowed_hosts=["127.0.0.1"]))  # a mirror the operator allowed
    obs = await call("fetch_url", url=f"{server.url}/hop")
    assert obs.is_error and "refused" in obs.text and "localhost" in obs.text
    assert [r.path for r in server.requests] == ["/hop"]
