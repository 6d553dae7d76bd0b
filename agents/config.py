"""Typed configs of the agent runtime's parts (loop, sandbox, tools, renderer, deck export)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional

from core.config import LLMConfig, RoleConfig, role_slots, store_config
from deck.config import DeckConfig
from render.config import RenderConfig

# The agents' template folders (project-relative): a run's config hash covers every template in them.
AGENT_PROMPTS = ("agents/roles/prompts", "agents/research/prompts", "agents/policies/templates")


class Agents(str, Enum):
    dual = "dual"  # a Researcher, then a Presenter
    single = "single"  # one agent with the union of their tools


class Reflection(str, Enum):
    grounded = "grounded"  # the inspect tools are offered: the agents see their rendered output
    none = "none"  # they are not


@dataclass
class GuardConfig:
    """When the loop gives up on a degenerate model (agents/guards.py); counts are turns, 0 turns a guard off."""

    no_tool_call_turns: int = 3  # in a row without a tool call -> agent/no_tool_calls
    repeated_call_turns: int = 3  # the same call(s) in a row, or a cycle of identical turns, N times -> agent/loop
    cut_turns: int = 3  # in a row cut at llm.max_tokens or llm.turn_timeout_s -> agent/rambling
    # without progress (a file written or changed, or a result not seen before), plus one per slide written -> agent/stalled
    stall_turns: int = 8


@dataclass
class AgentConfig:
    max_steps: int = 80
    max_wall_s: float = 3600.0
    max_total_tokens: int = 2_000_000
    max_tool_calls_per_turn: int = 8
    context_window: int = 50_000
    warn_fractions: list[float] = field(default_factory=lambda: [0.5, 0.8])
    save_interval_s: float = 2.0  # a running trajectory is checkpointed at most this often; the final one always
    guards: GuardConfig = field(default_factory=GuardConfig)


@dataclass
class SandboxConfig:
    """Limits applied to every tool call inside a task workspace."""

    call_timeout_s: float = 60.0
    command_timeout_s: float = 120.0
    max_read_bytes: int = 2_000_000
    max_write_bytes: int = 5_000_000
    max_output_chars: int = 4096  # observations longer than this are cut and saved whole
    command_memory_mb: int = 2048
    command_max_processes: int = 256
    command_tmp_mb: int = 256  # a jailed command's private /tmp and /dev/shm (each a tmpfs, held in memory)
    command_network: bool = False  # jailed commands reach no network (download_file fetches, with its checks)
    jail: str = "bubblewrap"  # bubblewrap | none: commands unjailed, only for a machine that cannot run bubblewrap
    allow_private_addresses: bool = False
    allowed_hosts: list[str] = field(default_factory=list)  # hosts download_file may reach even when private (a local mirror)
    max_download_bytes: int = 20_000_000


@dataclass
class ServiceConfig:
    """An online research service: its address and the variable holding its key (never the key itself)."""

    base_url: str = ""
    api_key_env: Optional[str] = None


def _research_services() -> dict[str, ServiceConfig]:
    return {
        "searxng": ServiceConfig("http://127.0.0.1:8888"),
        "tavily": ServiceConfig("https://api.tavily.com", "TAVILY_API_KEY"),
        "brave": ServiceConfig("https://api.search.brave.com", "BRAVE_API_KEY"),
        "openverse": ServiceConfig("https://api.openverse.org", "OPENVERSE_TOKEN"),
        "wikimedia": ServiceConfig("https://commons.wikimedia.org"),
        "arxiv": ServiceConfig("https://export.arxiv.org"),
        "semantic_scholar": ServiceConfig("https://api.semanticscholar.org", "S2_API_KEY"),
    }


@dataclass
class ImageGenerationConfig:
    """An OpenAI-compatible images endpoint (`POST {base_url}/images/generations`)."""

    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    model: str = "gpt-image-1"
    timeout_s: float = 120.0


@dataclass
class ToolsConfig:
    search_backend: str = "offline"  # offline | searxng | tavily | brave
    fetch_backend: str = "offline"  # offline (corpus:// only) | web
    image_backend: str = "offline"  # offline | openverse | wikimedia
    paper_backend: str = "offline"  # offline | arxiv | semantic_scholar
    services: dict[str, ServiceConfig] = field(default_factory=_research_services)
    corpus_index: Optional[str] = None  # SQLite FTS5 index (python -m agents.corpus build); None: built from `documents`
    image_library: Optional[str] = None  # folder with library.json (scripts/build_image_library.py); None: built from `documents`
    documents: Optional[str] = None  # what the default index and image library are built from; None: data/samples
    build_dir: Optional[str] = None  # where default indexes and libraries are built; None: ~/.cache/deckforge
    http_timeout_s: float = 30.0
    http_retries: int = 2  # extra attempts after a 429, a 5xx or a connection failure
    image_generation: Optional[ImageGenerationConfig] = None  # None: image_generation is not offered
    cache: str = "record"  # off | record | replay
    cache_dir: Optional[str] = None  # None: <run dir>/tool_cache
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


@dataclass
class AgentSetup:
    """What every entry point that plays the agents configures (agents.run, pipeline.synthesize, eval.run)."""

    llm: LLMConfig = field(default_factory=LLMConfig)
    roles: dict[str, RoleConfig] = field(default_factory=role_slots("agent"))
    agents: Agents = Agents.dual
    reflection: Reflection = Reflection.grounded
    agent: AgentConfig = field(default_factory=AgentConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    deck: DeckConfig = field(default_factory=DeckConfig)


@dataclass
class GenerateConfig(AgentSetup):
    """`python -m agents.run`: one deck for a person, no critic (configs/generate.yaml)."""


def store_schema() -> None:
    """Put GenerateConfig in Hydra's ConfigStore as `generate_schema` (configs/generate.yaml's defaults name it);
    called before Hydra composes that config."""
    store_config("generate_schema", GenerateConfig)
