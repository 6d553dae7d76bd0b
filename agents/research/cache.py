"""A content-addressed cache of retrieval results, so a rollout's observations can be reproduced offline.

The key is a hash of (tool, backend, normalised arguments); the entry is a JSON
file holding that request and its result, written atomically (a temporary file
renamed into place), so workers sharing a directory never read half an entry.
Modes: `off` (no cache), `record` (serve what is stored, call and store what is
not), `replay` (serve what is stored; anything else is a `CacheMiss`, never a
network call). Hits and misses are counted per tool for the run's statistics.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Awaitable, Callable

from agents.tools.registry import ToolError
from core.language import normalize_text

MODES = ("off", "record", "replay")


class CacheMiss(ToolError):
    """Replay asked for a result that was never recorded (the model sees it, and may ask for a recorded one)."""


def normalise_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as the key sees them: strings NFKC with collapsed whitespace, None values dropped."""
    return {k: normalize_text(v) if isinstance(v, str) else v for k, v in sorted(arguments.items()) if v is not None}


def cache_key(tool: str, backend: str, arguments: dict[str, Any]) -> str:
    request = {"tool": tool, "backend": backend, "arguments": normalise_arguments(arguments)}
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ToolCache:
    def __init__(self, directory: Path, mode: str = "record"):
        if mode not in MODES:
            raise ValueError(f"tool cache mode {mode!r}: expected one of {MODES}")
        self.directory = Path(directory)
        self.mode = mode
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def _count(self, event: str, tool: str) -> None:
        with self._lock:
            self._counts[event] += 1
            self._counts[f"{event}.{tool}"] += 1

    def stats(self) -> dict[str, int]:
        """Counts of hits and misses, in total ("hits", "misses") and per tool ("hits.search_web", ...)."""
        with self._lock:
            return dict(self._counts)

    def lookup(self, tool: str, backend: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        """(found, result) for a request, without calling anything."""
        path = self._path(cache_key(tool, backend, arguments))
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False, None
        except (OSError, json.JSONDecodeError) as exc:
            raise OSError(f"tool cache entry {path} is unreadable ({exc}); delete it to record it again") from exc
        return True, entry["result"]

    def store(self, tool: str, backend: str, arguments: dict[str, Any], result: Any) -> None:
        key = cache_key(tool, backend, arguments)
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"tool": tool, "backend": backend, "arguments": normalise_arguments(arguments), "result": result}
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    async def get(self, tool: str, backend: str, arguments: dict[str, Any], produce: Callable[[], Awaitable[Any]]) -> Any:
        """The result of a retrieval call (a JSON value): from the cache, or from `produce()` (recorded)."""
        if self.mode == "off":
            return await produce()
        found, result = self.lookup(tool, backend, arguments)
        if found:
            self._count("hits", tool)
            return result
        self._count("misses", tool)
        if self.mode == "replay":
            shown = json.dumps(normalise_arguments(arguments), ensure_ascii=False)
            raise CacheMiss(
                f"tool cache (replay mode) has no recorded result for {tool} {shown} with backend {backend!r} in {self.directory}"
            )
        result = await produce()
        self.store(tool, backend, arguments, result)
        return result
