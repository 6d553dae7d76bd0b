"""What research backends return: frozen records that round-trip through JSON (the tool cache stores them so)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Optional, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str
    published: Optional[str] = None
    location: Optional[str] = None  # e.g. "page 3" for a passage of a local document
    source: Optional[str] = None  # a local document's original URL, when it has one


@dataclass(frozen=True)
class ImageHit:
    title: str
    url: str  # a remote URL, or the library file's name for the offline library
    width: Optional[int]
    height: Optional[int]
    caption: str
    licence: Optional[str] = None
    source: Optional[str] = None  # the page or document the image comes from


@dataclass(frozen=True)
class Paper:
    id: str
    title: str
    authors: tuple[str, ...]
    year: Optional[int]
    abstract: str
    url: str


@dataclass(frozen=True)
class Author:
    id: str
    name: str
    affiliations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scholar:
    id: str
    name: str
    affiliations: tuple[str, ...]
    paper_count: Optional[int]
    citation_count: Optional[int]
    h_index: Optional[int]
    papers: tuple[tuple[str, Optional[int]], ...]  # (title, year), most relevant or recent first
    homepage: Optional[str] = None


def to_json(value: Any) -> Any:
    """Records (or lists of them) as plain JSON values; text stays text."""
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value if isinstance(value, str) else asdict(value)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def from_json(cls: type[R], data: dict[str, Any]) -> R:
    """A record from `to_json`'s output (JSON lists become the tuples the record holds)."""
    return cls(**{f.name: _tuples(data[f.name]) for f in fields(cls) if f.name in data})
