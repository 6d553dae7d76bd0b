"""Named backends of the research tools: a module adds one by registering it, and config picks it by name."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

from core.config import ConfigError

T = TypeVar("T")


class Backends(Generic[T]):
    """The backends of one tool family (web search, images, papers, fetching), by name."""

    def __init__(self, config_key: str):
        self.config_key = config_key  # the ToolsConfig field that picks one, for error messages
        self._items: dict[str, T] = {}
        self._keyed: dict[str, str] = {}

    def register(self, name: str, key_of: str | None = None) -> Callable[[T], T]:
        """Register a backend; `key_of`: the service (in ToolsConfig.services) whose API key it cannot work without."""

        def add(item: T) -> T:
            if name in self._items:
                raise ValueError(f"a {self.config_key} named {name!r} is already registered")
            self._items[name] = item
            if key_of:
                self._keyed[name] = key_of
            return item

        return add

    def key_service(self, name: str) -> str | None:
        """The service whose API key backend `name` needs, if any."""
        return self._keyed.get(name)

    def names(self) -> list[str]:
        return sorted(self._items)

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(f"tools.{self.config_key}={name!r}: unknown; known: {self.names()}") from None
