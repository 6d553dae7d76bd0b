"""The stage registry of `pipeline.synthesize`: each stage module registers itself here."""

from __future__ import annotations

from typing import Any, Callable

from core.run import RunContext

StageFn = Callable[[RunContext], dict[str, Any]]
REGISTRY: dict[str, StageFn] = {}


def stage(name: str) -> Callable[[StageFn], StageFn]:
    def register(fn: StageFn) -> StageFn:
        REGISTRY[name] = fn
        return fn

    return register
