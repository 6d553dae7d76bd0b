"""The one place a role's model is built from its config.

Every role (agent, critic, task writer, judges, describer, research tools) resolves its
endpoint with `resolve_role` and gets its client here, so any role can use any backend:
`roles.critic.backend=scripted` while the agents run on a real model, or the reverse.
A scripted role gets no client: the caller plays it with its own rule-based stand-in.
"""

from __future__ import annotations

from typing import Callable, Mapping

from core.config import Backend, ConfigError, LLMConfig, RoleConfig, resolve_role
from core.llm import ModelClient
from core.protocols import Endpoint

LOCAL_UNSTARTED = "local://not-started"  # configs/llm/local.yaml's base_url until core.local_server starts it

ClientFactory = Callable[[LLMConfig, str], "Endpoint | None"]  # (resolved endpoint, role) -> its client


def _openai_compatible(cfg: LLMConfig, role: str) -> ModelClient:
    if cfg.base_url == LOCAL_UNSTARTED:
        raise ConfigError(f"role {role}: backend=local, but no local model server was started for it (core.local_server.serving)")
    return ModelClient(cfg, role)


def _scripted(cfg: LLMConfig, role: str) -> None:
    return None


BACKENDS: dict[str, ClientFactory] = {  # `llm.backend` / `roles.<role>.backend` names one; a new backend is one line here
    Backend.openai: _openai_compatible,  # any OpenAI-compatible endpoint at base_url: a hosted API, a vLLM fleet
    Backend.local: _openai_compatible,  # a GGUF model core.local_server serves on loopback for the entry point
    Backend.scripted: _scripted,  # a rule-based stand-in, not a model: each role's caller plays it without a client
}


def check_backend(key: str, backend: str | None) -> None:
    if backend is not None and backend not in BACKENDS:
        raise ConfigError(f"{key}={backend}: unknown backend; known: {', '.join(BACKENDS)}")


def is_scripted(cfg: LLMConfig) -> bool:
    return cfg.backend == Backend.scripted


def client_for(cfg: LLMConfig, role: str) -> Endpoint | None:
    """The client of a resolved endpoint; None when the role is scripted."""
    check_backend(f"role {role}: backend", cfg.backend)
    return BACKENDS[cfg.backend](cfg, role)


def role_client(llm: LLMConfig, roles: Mapping[str, RoleConfig], role: str) -> Endpoint | None:
    """The client playing `role` (the backbone `llm` with the role's overrides); None when it is scripted.
    Its calls count into the unit being worked on (core.metering)."""
    return client_for(resolve_role(llm, roles, role), role)
