"""Rows of Parquet files found by key, decoding only the row groups that hold them.

The index maps each key to its file, row group and row, and is read from the key column alone: a run
of 100,000 units holds their ids, not their records. Files are written in row groups of `ROW_GROUP`
rows (core.records.write_parquet, the sealed shards), so fetching a batch of neighbouring keys decodes
a few thousand rows, whatever the run's size.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow.parquet as pq

_GROUP_BITS = 24  # a place is one int: file << 48 | row group << 24 | row (an int, not a tuple: 32 bytes a key)
_ROW_MASK = (1 << _GROUP_BITS) - 1


class KeyedRows:
    """The rows of `files` by their `key` column; where a key is in several files the first file's row counts."""

    def __init__(self, files: Sequence[Path], key: str):
        self.files = tuple(files)
        self._where: dict[str, int] = {}
        for f, path in enumerate(self.files):
            parquet = pq.ParquetFile(path)
            for g in range(parquet.num_row_groups):
                keys = parquet.read_row_group(g, columns=[key]).column(key).to_pylist()
                for r, k in enumerate(keys):
                    self._where.setdefault(str(k), (f << 2 * _GROUP_BITS) | (g << _GROUP_BITS) | r)

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def __len__(self) -> int:
        return len(self._where)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def fetch(self, keys: Iterable[str], columns: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """The rows of the `keys` this index holds (others are left out), as dicts of `columns` (default: all)."""
        wanted: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)
        for key in keys:
            place = self._where.get(key)
            if place is not None:
                wanted[(place >> 2 * _GROUP_BITS, (place >> _GROUP_BITS) & _ROW_MASK)].append((place & _ROW_MASK, key))
        found: dict[str, dict[str, Any]] = {}
        for (f, g), rows in sorted(wanted.items()):
            group = pq.ParquetFile(self.files[f]).read_row_group(g, columns=list(columns) if columns else None)
            found.update(zip((key for _, key in rows), group.take([row for row, _ in rows]).to_pylist()))
        return found
