"""What the research tools share in a worker: config, service endpoints, the tool cache, the offline
corpus and image library (built on first use), and the model roles behind document_analyze and image_caption.

The pipeline builds one `Research` per worker with `build_research(...)` and
puts it in each rollout's `ToolContext.resources[RESOURCE_KEY]`; it leaves out
of the researcher's toolset the tools named by `Research.unavailable_tools()`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from agents.config import ToolsConfig
from agents.jail import check_jail
from agents.research import fetch, images, papers, search
from agents.research.backends import ResearchBackend, pick
from agents.research.cache import MODES, ToolCache
from agents.research.documents import document_files, load_documents
from agents.research.http import Service
from agents.research.imagelib import ImageLibrary, build_library
from agents.research.index import SCHEMA_VERSION, CorpusIndex, build_index
from agents.tools.registry import ToolContext, ToolError
from core.config import PROJECT_ROOT, ConfigError
from core.llm.players import Players
from core.protocols import Model, Play

RESOURCE_KEY = "research"
DEFAULT_DOCUMENTS = PROJECT_ROOT / "data" / "samples"
DEFAULT_BUILD_DIR = Path("~/.cache/deckforge")
ANALYZER_ROLE, CAPTIONER_ROLE = "document_analyzer", "image_captioner"


def fingerprint(source: Path) -> str:
    """A short hash of a document collection's file names, sizes and times (and the index schema)."""
    digest = hashlib.sha256(SCHEMA_VERSION.encode())
    for path in document_files(source):
        st = path.stat()
        digest.update(f"{path.relative_to(source) if path != source else path.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


@dataclass
class Research:
    config: ToolsConfig
    cache: ToolCache
    analyzer: Optional[Model] = None
    captioner: Optional[Model] = None
    _corpus: Optional[CorpusIndex] = field(default=None, init=False, repr=False)
    _library: Optional[ImageLibrary] = field(default=None, init=False, repr=False)
    _building: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    def service(self, name: str) -> Service:
        """The configured endpoint of a service, with its key read from the environment (None when unset)."""
        try:
            cfg = self.config.services[name]
        except KeyError:
            raise ConfigError(f"tools.services has no {name!r} entry; known: {sorted(self.config.services)}") from None
        key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        return Service(name, cfg.base_url, key or None, self.config.http_timeout_s, self.config.http_retries)

    def _default_build(self) -> tuple[Path, str]:
        source = Path(self.config.documents).expanduser() if self.config.documents else DEFAULT_DOCUMENTS
        build_dir = Path(self.config.build_dir or DEFAULT_BUILD_DIR).expanduser()
        return source, f"{build_dir}/{source.name}-{fingerprint(source)}"

    async def corpus(self) -> CorpusIndex:
        """The configured index, or the one built from `documents` (built on first use, then reused)."""
        async with self._building:
            if self._corpus is None:
                if self.config.corpus_index:
                    self._corpus = CorpusIndex(Path(self.config.corpus_index).expanduser())
                else:
                    source, stem = self._default_build()
                    path = Path(f"{stem}.db")
                    if not path.is_file():
                        await asyncio.to_thread(build_index, load_documents(source), path)
                    self._corpus = CorpusIndex(path)
            return self._corpus

    async def image_library(self) -> ImageLibrary:
        """The configured library, or the one extracted from `documents` (built on first use, then reused)."""
        async with self._building:
            if self._library is None:
                if self.config.image_library:
                    self._library = ImageLibrary(Path(self.config.image_library).expanduser())
                else:
                    source, stem = self._default_build()
                    folder = Path(f"{stem}-images")
                    if not folder.is_dir():
                        await asyncio.to_thread(build_library, source, folder)
                    self._library = ImageLibrary(folder)
            return self._library

    async def prepare(self) -> None:
        """Build the offline corpus and image library the configured backends read, before the first rollout: built
        on first use, a large collection would spend the first tool call's time limit on the build."""
        tools = self.config
        if "offline" in (tools.search_backend, tools.fetch_backend, tools.paper_backend):
            await self.corpus()
        if tools.image_backend == "offline":
            await self.image_library()

    def unavailable_tools(self) -> set[str]:
        """Tools to leave out of the toolset: those whose model role or endpoint is not configured."""
        needs = {
            "document_analyze": self.analyzer,
            "image_caption": self.captioner,
            "image_generation": self.config.image_generation,
        }
        return {name for name, dependency in needs.items() if dependency is None}


def research_of(ctx: ToolContext) -> Research:
    try:
        return ctx.resources[RESOURCE_KEY]
    except KeyError:
        raise ToolError(f"research tools are not set up here (no ToolContext.resources[{RESOURCE_KEY!r}])") from None


# A research model role's players: its client, or (scripted) none, and the tools that need it are left out.
RESEARCH_MODEL: Play[Model | None] = Play(lambda client: client, lambda _: None)


def build_research(config: ToolsConfig, run_dir: Path, players: Players | None = None) -> Research:
    """The research state of one worker; the tool cache goes to `config.cache_dir` or `<run_dir>/tool_cache`.
    A model role (document analysis, captions) is played where `roles` names it; `players` closes its client."""
    validate_tools_config(config)
    cache = ToolCache(Path(config.cache_dir).expanduser() if config.cache_dir else run_dir / "tool_cache", config.cache)
    return Research(config, cache, _model(players, ANALYZER_ROLE), _model(players, CAPTIONER_ROLE))


def _model(players: Players | None, role: str) -> Model | None:
    return players.play(role, RESEARCH_MODEL) if players is not None and role in players.roles else None


def validate_tools_config(config: ToolsConfig) -> None:
    """Backends known, cache mode valid, required API keys present, the commands' jail able to start
    here; ConfigError naming the key otherwise."""
    if config.cache not in MODES:
        raise ConfigError(f"tools.cache={config.cache!r}: expected one of {MODES}")
    if config.cache == "replay" and config.cache_dir and not Path(config.cache_dir).expanduser().is_dir():
        raise ConfigError(f"tools.cache=replay but tools.cache_dir={config.cache_dir!r} does not exist")
    paths = [
        ("corpus_index", config.corpus_index, Path.is_file),
        ("image_library", config.image_library, Path.is_dir),
        ("documents", config.documents, Path.exists),
    ]
    for key, value, exists in paths:
        if value and not exists(Path(value).expanduser()):
            raise ConfigError(f"tools.{key}={value!r} does not exist")
    families: list[tuple[Mapping[str, ResearchBackend], str]] = [
        (search.SEARCH, "search_backend"),
        (fetch.FETCH, "fetch_backend"),
        (images.IMAGES, "image_backend"),
        (papers.PAPERS, "paper_backend"),
    ]
    for family, key in families:
        name = getattr(config, key)
        service = pick(family, key, name).key_of
        if service is None:
            continue
        if service not in config.services:
            raise ConfigError(f"tools.{key}={name!r} needs tools.services.{service}, which is missing")
        env = config.services[service].api_key_env
        if not env or not os.environ.get(env):
            raise ConfigError(
                f"tools.{key}={name!r} needs an API key: set the variable named by tools.services.{service}.api_key_env ({env!r})"
            )
    check_jail(config.sandbox)
