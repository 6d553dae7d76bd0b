"""The one way an extension point's literal list becomes its table: entries by name, in order, each name once."""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


def by_name(entries: Iterable[T], name: Callable[[T], str], what: str) -> dict[str, T]:
    """`entries` keyed by `name`, in order; ValueError when two share a name (`what` names the table in the error)."""
    table: dict[str, T] = {}
    for entry in entries:
        key = name(entry)
        if key in table:
            raise ValueError(f"{what} {key!r} is in the table twice")
        table[key] = entry
    return table
