"""Iterating in bounded batches (itertools.batched arrives with Python 3.12; the project runs on 3.11)."""

from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[tuple[T, ...]]:
    """`items` as tuples of `size` (the last one shorter), read lazily."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    it = iter(items)
    while batch := tuple(islice(it, size)):
        yield batch
