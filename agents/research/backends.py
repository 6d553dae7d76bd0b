"""Named backends of the research tools: each family is a dict literal of `ResearchBackend` rows, and config picks one by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Mapping, TypeVar

from core.config import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class ResearchBackend(Generic[T]):
    """One backend of a tool family (web search, images, papers, fetching)."""

    impl: T  # the function or object the tools call
    key_of: str | None = None  # the service (in ToolsConfig.services) whose API key it cannot work without


def pick(family: Mapping[str, ResearchBackend[T]], config_key: str, name: str) -> ResearchBackend[T]:
    """The backend `tools.<config_key>` names; ConfigError naming the known ones otherwise."""
    try:
        return family[name]
    except KeyError:
        raise ConfigError(f"tools.{config_key}={name!r}: unknown; known: {sorted(family)}") from None
