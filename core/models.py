"""The one place a role's model is built from its config.

Every role (agent, critic, task writer, judges, describer, research tools) resolves its
endpoint with `resolve_role` and gets its client here, so any role can use any backend:
`roles.critic.backend=scripted` while the agents run on a real model, or the reverse.
A scripted role gets no client: the caller plays it with its own rule-based stand-in.
"""

from __future__ import annotations

from typing import Mapping

from core.config import Backend, ConfigError, LLMConfig, RoleConfig, resolve_role
from core.llm import ModelClient

LOCAL_UNSTARTED = "local://not-started"  # configs/llm/local.yaml's base_url until core.local_server starts it


def is_scripted(cfg: LLMConfig) -> bool:
    return Backend(cfg.backend) is Backend.scripted


def client_for(cfg: LLMConfig, role: str) -> ModelClient | None:
    """The client of a resolved endpoint; None when the role is scripted."""
    if is_scripted(cfg):
        return None
    if cfg.base_url == LOCAL_UNSTARTED:
        raise ConfigError(f"role {role}: backend=local, but no local model server was started for it (core.local_server.serving)")
    return ModelClient(cfg, role)


def role_client(llm: LLMConfig, roles: Mapping[str, RoleConfig], role: str) -> ModelClient | None:
    """The client playing `role` (the backbone `llm` with the role's overrides); None when it is scripted.
    Its calls count into the unit being worked on (core.metering)."""
    return client_for(resolve_role(llm, roles, role), role)
