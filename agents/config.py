"""Typed configs of the agent runtime's parts (loop, sandbox, tools, renderer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class AgentConfig:
    max_steps: int = 80
    max_wall_s: float = 3600.0
    max_total_tokens: int = 2_000_000
    max_tool_calls_per_turn: int = 8
    context_window: int = 50_000
    warn_fractions: list[float] = field(default_factory=lambda: [0.5, 0.8])


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
    allow_private_addresses: bool = False
    allowed_hosts: list[str] = field(default_factory=list)  # hosts download_file may reach even when private (a local mirror)
    max_download_bytes: int = 20_000_000


@dataclass
class RenderConfig:
    chromium_path: str = "/usr/bin/chromium"
    max_concurrent: int = 8  # renders in flight per worker process
    max_pages: int = 8  # pages kept open for reuse
    timeout_s: float = 30.0
    device_scale_factor: float = 1.0


@dataclass
class ToolsConfig:
    search_backend: str = "offline"  # offline | searxng | tavily | brave
    corpus_index: Optional[str] = None  # SQLite FTS5 index; None: built from bundled samples
    cache: str = "record"  # off | record | replay
    cache_dir: Optional[str] = None  # None: <run dir>/tool_cache
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
