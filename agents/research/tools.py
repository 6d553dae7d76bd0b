"""The researcher's tools, listed in `TOOLS`: search, fetch, images, papers, conversion, model-backed reading.

Each tool picks its backend from `ToolsConfig` through the worker's `Research`
(`ctx.resources["research"]`). Retrieval results pass through the tool cache,
and the observation is rendered from the cached records, so a replay shows the
model the same text byte for byte.
"""

from __future__ import annotations

import asyncio
from pathlib import PurePosixPath
from typing import Annotated, Any, Awaitable, Callable, Optional

from pydantic import Field

from agents.config import SandboxConfig
from agents.research.backends import pick
from agents.research.convert import ConversionError, convert_bytes, document_text
from agents.research.documents import document_files, load_documents
from agents.research.fetch import CORPUS_SCHEME, fetch_page
from agents.research.images import IMAGES
from agents.research.index import CorpusIndex, build_index
from agents.research.models import analyze_document, caption_image, generate_image
from agents.research.papers import PAPERS
from agents.research.render import authors_text, hits_text, images_text, papers_text, scholar_text
from agents.research.runtime import Research, fingerprint, research_of
from agents.research.search import SEARCH, TimeRange
from agents.tools.files import image_size
from agents.tools.registry import Tool, ToolContext, ToolError
from core.protocols import PaperBackend
from core.seams.research import Author, ImageHit, Paper, Scholar, SearchHit, from_json, to_json
from core.seams.steps import Observation

ROLE = "researcher"
IMAGE_RESULTS = 5
LIBRARY_ASSETS = "assets/library"  # where offline library images are copied in the workspace
MODEL_CALL_TIMEOUT_S = 600.0
ATTACHMENTS = "attachments"  # where the task's attached files are copied (agents.workflow)
ATTACHMENT_INDEX = ".research/attachments.db"

Query = Annotated[str, Field(min_length=1, description="What to look for, in the language of the sources you want.")]
MaxResults = Annotated[int, Field(ge=1, le=20, description="How many results to return.")]


def _model_timeout(cfg: SandboxConfig) -> float:
    return max(cfg.call_timeout_s, MODEL_CALL_TIMEOUT_S)


def _papers(backend: str) -> PaperBackend:
    return pick(PAPERS, "paper_backend", backend).impl


async def _retrieve(
    research: Research, tool_name: str, backend: str, arguments: dict[str, Any], call: Callable[[], Awaitable[Any]]
) -> Any:
    """The JSON form of `call()`'s records, through the tool cache."""

    async def produce() -> Any:
        return to_json(await call())

    return await research.cache.get(tool_name, backend, arguments, produce)


async def search_web(
    ctx: ToolContext,
    query: Query,
    max_results: MaxResults = 5,
    time_range: Annotated[
        Optional[TimeRange], Field(description="Only pages from the last day, week, month or year (web backends).")
    ] = None,
) -> Observation:
    """Search the web (or, offline, the local document collection). Returns titles, URLs and snippets; read a result with fetch_url."""
    research = research_of(ctx)
    backend = research.config.search_backend
    attached = await attachment_index(ctx) if backend == "offline" else None
    arguments = {"query": query, "max_results": max_results, "time_range": time_range}

    async def search() -> list[SearchHit]:
        own = attached[0].search(query, max_results) if attached else []
        shared = await pick(SEARCH, "search_backend", backend).impl(research, query, max_results, time_range)
        return (own + [h for h in shared if h.url not in {o.url for o in own}])[:max_results]

    found = await _retrieve(
        research, "search_web", backend, arguments | ({"attachments": attached[1]} if attached else {}), search
    )
    hits = [from_json(SearchHit, h) for h in found]
    return Observation(hits_text(query, hits), items=tuple(f"{h.url} {h.location or ''}" for h in hits))


async def attachment_index(ctx: ToolContext) -> tuple[CorpusIndex, str] | None:
    """The task's own attached documents, indexed once per workspace (offline search covers them too)."""
    folder = ctx.workspace.root / ATTACHMENTS
    if not folder.is_dir() or not document_files(folder):
        return None
    digest = fingerprint(folder)
    index, stamp = ctx.workspace.root / ATTACHMENT_INDEX, ctx.workspace.root / f"{ATTACHMENT_INDEX}.fingerprint"
    if not index.is_file() or not stamp.is_file() or stamp.read_text() != digest:
        await asyncio.to_thread(build_index, load_documents(folder), index)
        stamp.write_text(digest)
    return CorpusIndex(index), digest


async def fetch_url(
    ctx: ToolContext,
    url: Annotated[str, Field(min_length=1, description="An http(s) URL, or a corpus:// address from search_web.")],
) -> str:
    """Read a web page or PDF as Markdown (or a corpus:// document from search_web). Long pages are saved whole; read them on with read_file."""
    research = research_of(ctx)
    attached = await attachment_index(ctx) if url.startswith(CORPUS_SCHEME) else None
    arguments = {"url": url} | ({"attachments": attached[1]} if attached else {})
    index = attached[0] if attached else None
    return await _retrieve(
        research, "fetch_url", research.config.fetch_backend, arguments, lambda: fetch_page(research, url, ctx.sandbox, index)
    )


async def search_images(ctx: ToolContext, query: Query) -> Observation:
    """Find images (photos, figures, diagrams) with their size, caption and licence. Web results are URLs to save with
    download_file; results from the local library are copied into the workspace (assets/library/)."""
    research = research_of(ctx)
    backend = research.config.image_backend
    found = await _retrieve(
        research,
        "search_images",
        backend,
        {"query": query},
        lambda: pick(IMAGES, "image_backend", backend).impl(research, query, IMAGE_RESULTS),
    )
    hits = [from_json(ImageHit, h) for h in found]
    saved: list[str] = []
    if backend == "offline":
        library = await research.image_library()
        for hit in hits:
            saved.append(f"{LIBRARY_ASSETS}/{hit.url}")
            ctx.workspace.write_bytes(saved[-1], library.read(hit.url))
    return Observation(images_text(query, hits, saved), items=tuple(h.url for h in hits))


async def search_papers(ctx: ToolContext, query: Query, max_results: MaxResults = 5) -> Observation:
    """Search research papers: titles, authors, year, abstract and an id for get_paper_authors."""
    research = research_of(ctx)
    backend = research.config.paper_backend
    found = await _retrieve(
        research,
        "search_papers",
        backend,
        {"query": query, "max_results": max_results},
        lambda: _papers(backend).search(research, query, max_results),
    )
    papers = [from_json(Paper, p) for p in found]
    return Observation(papers_text(query, papers), items=tuple(p.id for p in papers))


async def get_paper_authors(
    ctx: ToolContext, paper_id: Annotated[str, Field(min_length=1, description="A paper id from search_papers.")]
) -> str:
    """List a paper's authors (with affiliations when known) and their author_id for get_scholar_details."""
    research = research_of(ctx)
    backend = research.config.paper_backend
    found = await _retrieve(
        research, "get_paper_authors", backend, {"paper_id": paper_id}, lambda: _papers(backend).authors(research, paper_id)
    )
    return authors_text(paper_id, [from_json(Author, a) for a in found])


async def get_scholar_details(
    ctx: ToolContext, author_id: Annotated[str, Field(min_length=1, description="An author_id from get_paper_authors.")]
) -> str:
    """Details of a researcher: affiliations, counts of papers and citations, h-index where known, and their papers."""
    research = research_of(ctx)
    backend = research.config.paper_backend
    found = await _retrieve(
        research,
        "get_scholar_details",
        backend,
        {"author_id": author_id},
        lambda: _papers(backend).scholar(research, author_id),
    )
    return scholar_text(from_json(Scholar, found))


def _read_document(ctx: ToolContext, path: str) -> bytes:
    return ctx.workspace.read_bytes(path, ctx.sandbox.max_download_bytes)


async def convert_to_markdown(
    ctx: ToolContext,
    file_path: Annotated[str, Field(description="A PDF, DOCX, PPTX, XLSX or HTML file in the workspace.")],
    output_folder: Annotated[str, Field(description="Workspace folder for the Markdown file and the extracted images.")],
) -> str:
    """Convert a document to Markdown, extracting its images into output_folder (listed largest first)."""
    try:
        conversion = await asyncio.to_thread(convert_bytes, _read_document(ctx, file_path), file_path)
    except ConversionError as exc:
        raise ToolError(f"{file_path}: {exc}") from exc
    folder = PurePosixPath(output_folder)
    for image in conversion.images:
        ctx.workspace.write_bytes(str(folder / image.name), image.data)
    markdown_path = str(folder / f"{PurePosixPath(file_path).stem}.md")
    ctx.workspace.write_bytes(markdown_path, conversion.markdown.encode())
    pages = f", {conversion.pages} pages" if conversion.pages else ""
    lines = [
        f"Converted {file_path} to {markdown_path} ({len(conversion.markdown):,} characters{pages}); read it with read_file."
    ]
    if conversion.images:
        lines.append(f"{len(conversion.images)} image(s), largest first:")
        lines += [f"- {folder / i.name} ({i.width}x{i.height})" for i in conversion.images]
    else:
        lines.append("No images were found.")
    return "\n".join(lines)


async def document_analyze(
    ctx: ToolContext,
    task: Annotated[str, Field(min_length=1, description="What to find out or extract from the document.")],
    document_path: Annotated[
        str, Field(description="A document in the workspace (PDF, DOCX, PPTX, XLSX, HTML, Markdown or text).")
    ],
) -> str:
    """Have a reading model answer a question about a long document (summaries, key numbers, structure)."""
    research = research_of(ctx)
    if research.analyzer is None:
        raise ToolError("document_analyze is not available in this run (no document_analyzer role is configured).")
    try:
        text = await asyncio.to_thread(document_text, _read_document(ctx, document_path), document_path)
    except ConversionError as exc:
        raise ToolError(f"{document_path}: {exc}") from exc
    return await analyze_document(research.analyzer, task, document_path, text)


async def image_caption(
    ctx: ToolContext, image_path: Annotated[str, Field(description="An image file in the workspace.")]
) -> str:
    """Describe an image (what it shows, readable text, colours) and suggest alt text."""
    research = research_of(ctx)
    if research.captioner is None:
        raise ToolError("image_caption is not available in this run (no image_captioner role is configured).")
    if image_size(ctx.workspace.read_bytes(image_path, ctx.sandbox.max_read_bytes)) is None:
        raise ToolError(f"{image_path!r} is not a readable image.")
    return await caption_image(research.captioner, str(ctx.workspace.resolve(image_path)), ctx.workspace.root)


async def image_generation(
    ctx: ToolContext,
    prompt: Annotated[str, Field(min_length=1, description="What the image should show, and its style.")],
    width: Annotated[int, Field(ge=256, le=4096, description="Width in pixels.")],
    height: Annotated[int, Field(ge=256, le=4096, description="Height in pixels.")],
    path: Annotated[str, Field(description="Where to save it in the workspace (e.g. 'assets/cover.png').")],
) -> str:
    """Generate an image from a text prompt and save it in the workspace."""
    research = research_of(ctx)
    cfg = research.config.image_generation
    if cfg is None:
        raise ToolError("image_generation is not available in this run (tools.image_generation is not configured).")
    data = await generate_image(cfg, prompt, width, height, research.config.http_retries)
    found = image_size(data)
    if found is None:
        raise ToolError("image_generation: the endpoint returned data that is not an image.")
    ctx.workspace.write_bytes(path, data)
    return f"Generated {path} ({found[0]}, {found[1]}x{found[2]})."


TOOLS = (
    Tool.from_function(search_web, ROLE),
    Tool.from_function(fetch_url, ROLE),
    Tool.from_function(search_images, ROLE),
    Tool.from_function(search_papers, ROLE),
    Tool.from_function(get_paper_authors, ROLE),
    Tool.from_function(get_scholar_details, ROLE),
    Tool.from_function(convert_to_markdown, ROLE),
    Tool.from_function(document_analyze, ROLE, timeout_s=_model_timeout),
    Tool.from_function(image_caption, ROLE, timeout_s=_model_timeout),
    Tool.from_function(image_generation, ROLE, timeout_s=_model_timeout),
)
