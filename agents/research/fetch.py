"""fetch_url backends: `web` downloads a page (address checks at every hop, size cap) and turns it into Markdown;
`offline` refuses the web. `corpus://<id>` addresses (what offline search returns) resolve from the local index
whatever the backend.

The download is download_file's checked fetch (agents/web.py):
every address a host resolves to, at every redirect, must be public unless
`SandboxConfig.allow_private_addresses` (or `allowed_hosts`) says otherwise.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Awaitable, Callable

from trafilatura.utils import decode_file

from agents.config import SandboxConfig
from agents.research.backends import ResearchBackend, pick
from agents.research.convert import ConversionError, pdf_to_markdown
from agents.research.documents import html_to_text
from agents.research.index import CorpusError, CorpusIndex
from agents.tools.registry import ToolError
from agents.web import fetch

if TYPE_CHECKING:
    from agents.research.runtime import Research

CORPUS_SCHEME = "corpus://"
MAX_PAGE_CHARS = 300_000
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<div", b"<p>")

FetchBackend = Callable[["Research", str, SandboxConfig], Awaitable[str]]


def page_markdown(body: bytes, url: str) -> str:
    """A downloaded body as Markdown: PDF through the PDF converter, HTML through trafilatura, text as it is."""
    if body.startswith(b"%PDF-"):
        try:
            return pdf_to_markdown(body, "page", with_images=False).markdown
        except ConversionError as exc:
            raise ToolError(f"{url}: {exc}") from exc
    head = body[:2048].lower()
    if b"\0" in head:
        raise ToolError(
            f"{url} is a binary file, not a page; save it with download_file (and convert_to_markdown for documents)."
        )
    text = decode_file(body)
    return html_to_text(text) if any(m in head for m in _HTML_MARKERS) else text


async def fetch_offline(research: Research, url: str, sandbox: SandboxConfig) -> str:
    raise ToolError(
        f"{url}: the web is not reachable here (tools.fetch_backend=offline); fetch the corpus:// addresses that search_web returns."
    )


async def fetch_web(research: Research, url: str, sandbox: SandboxConfig) -> str:
    body, final = await fetch(url, sandbox)
    markdown = await asyncio.to_thread(page_markdown, body, str(final))
    moved = f" (redirected to {final})" if str(final) != url else ""
    return f"# {url}{moved}\n\n{markdown}"


FETCH: dict[str, ResearchBackend[FetchBackend]] = {
    "offline": ResearchBackend(fetch_offline),
    "web": ResearchBackend(fetch_web),
}


def _corpus_document(index: CorpusIndex | None, doc_id: str) -> str | None:
    try:
        return index.document(doc_id).markdown() if index else None
    except CorpusError:
        return None


async def fetch_page(research: Research, url: str, sandbox: SandboxConfig, attachments: CorpusIndex | None = None) -> str:
    """The Markdown of a URL or a corpus:// document (the task's attachments first), cut at MAX_PAGE_CHARS."""
    if url.startswith(CORPUS_SCHEME):
        doc_id = url.removeprefix(CORPUS_SCHEME).split("#")[0]
        try:
            text = _corpus_document(attachments, doc_id) or (await research.corpus()).document(doc_id).markdown()
        except CorpusError as exc:
            raise ToolError(str(exc)) from exc
    else:
        text = await pick(FETCH, "fetch_backend", research.config.fetch_backend).impl(research, url, sandbox)
    if len(text) > MAX_PAGE_CHARS:
        text = text[:MAX_PAGE_CHARS] + f"\n[cut: the page has {len(text):,} characters; the first {MAX_PAGE_CHARS:,} are shown]"
    return text
