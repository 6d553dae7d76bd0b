"""Research results as the text a model (or a person at the CLI) reads. Deterministic: same records, same text."""

from __future__ import annotations

from typing import Sequence

from core.seams.research import Author, ImageHit, Paper, Scholar, SearchHit

ABSTRACT_SHOWN = 600


def hits_text(query: str, hits: Sequence[SearchHit]) -> str:
    if not hits:
        return f"No results for {query!r}. Try other or fewer words."
    lines = [f"Results for {query!r}:"]
    for n, hit in enumerate(hits, 1):
        where = " | ".join(x for x in (hit.url, hit.location, hit.published, hit.source) if x)
        lines += [f"{n}. {hit.title}", f"   {where}", f"   {hit.snippet}"]
    return "\n".join(lines)


def images_text(query: str, hits: Sequence[ImageHit], saved: Sequence[str] = ()) -> str:
    """`saved`: workspace paths the images were copied to (offline library), in the order of `hits`."""
    if not hits:
        return f"No images for {query!r}. Try other or fewer words."
    lines = [f"Images for {query!r}:"]
    for n, hit in enumerate(hits, 1):
        size = f"{hit.width}x{hit.height}" if hit.width and hit.height else "size unknown"
        where = f"saved to {saved[n - 1]}" if saved else hit.url
        lines += [f"{n}. {hit.title} ({size}) {where}", f"   caption: {hit.caption or '(none)'}"]
        credit = " | ".join(x for x in (hit.licence and f"licence: {hit.licence}", hit.source and f"from: {hit.source}") if x)
        if credit:
            lines.append(f"   {credit}")
    return "\n".join(lines)


def _authors(names: Sequence[str], shown: int = 8) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more if names else "(authors unknown)"


def papers_text(query: str, papers: Sequence[Paper]) -> str:
    if not papers:
        return f"No papers for {query!r}. Try other or fewer words."
    lines = [f"Papers for {query!r}:"]
    for n, p in enumerate(papers, 1):
        abstract = p.abstract if len(p.abstract) <= ABSTRACT_SHOWN else p.abstract[:ABSTRACT_SHOWN].rsplit(" ", 1)[0] + "…"
        lines += [
            f"{n}. {p.title} ({p.year or 'year unknown'})",
            f"   id: {p.id} | {p.url}",
            f"   authors: {_authors(p.authors)}",
        ]
        if abstract:
            lines.append(f"   abstract: {abstract}")
    return "\n".join(lines)


def authors_text(paper_id: str, authors: Sequence[Author]) -> str:
    if not authors:
        return f"No authors are listed for paper {paper_id}."
    lines = [f"Authors of {paper_id}:"]
    for n, a in enumerate(authors, 1):
        affiliation = f" ({'; '.join(a.affiliations)})" if a.affiliations else ""
        lines.append(f"{n}. {a.name}{affiliation} | author_id: {a.id}")
    return "\n".join(lines)


def scholar_text(s: Scholar) -> str:
    facts = [
        ("affiliations", "; ".join(s.affiliations) or None),
        ("papers", s.paper_count),
        ("citations", s.citation_count),
        ("h-index", s.h_index),
        ("homepage", s.homepage),
    ]
    lines = [f"{s.name} (author_id: {s.id})"] + [f"{k}: {v}" for k, v in facts if v is not None]
    if s.papers:
        lines.append("papers:")
        lines += [f"- {title} ({year or 'year unknown'})" for title, year in s.papers]
    return "\n".join(lines)
