"""The one place a role gets its player: a model client, or the scripted backend's rule-based stand-in.

Every role (agents, critic, task writer, judges, describer, research tools) names the two ways it can be
played in a `Play` beside its code: by a model client, or by its stand-in. The role's backend
(`llm.backend`, `roles.<role>.backend`, resolved by `resolve_role`) chooses: a chat backend wraps its
transport in a `ModelClient` (so retries, limits, budget, metering, price and provenance are the same for
every backend) and hands it to `by_model`; `scripted` is the backend whose players are the stand-ins.
No caller asks which backend it got. Calls count into the unit being worked on (core.run.metering).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, TypeVar

from omegaconf import DictConfig

from core.cli import InputError
from core.config import Backend, ConfigError, LLMConfig, RoleConfig, resolve_role
from core.llm.client import ModelClient, OpenAIWire, close_models
from core.llm.results import ModelError
from core.protocols import Endpoint, ModelBackend, Play, Transport


class EndpointUnreachable(ModelError, InputError):
    """A role's endpoint did not answer the check made before any work (its ModelError, as bad input)."""

    def __init__(self, error: ModelError):
        Exception.__init__(self, str(error))
        self.kind, self.attempts = error.kind, error.attempts


LOCAL_UNSTARTED = "local://not-started"  # configs/llm/local.yaml's base_url until core.llm.local_server starts it

T = TypeVar("T")


@dataclass(frozen=True)
class Chat:
    """A backend that answers by a model: its transport, built for each client from the role's endpoint."""

    transport: Callable[[LLMConfig], Transport]
    policy: str = "model"

    def play(self, cfg: LLMConfig, role: str, how: Play[T]) -> tuple[T, ModelClient | None]:
        client = ModelClient(cfg, role, transport=self.transport(cfg))
        return how.by_model(client), client


@dataclass(frozen=True)
class StandIns:
    """The scripted backend: every role played by its rule-based stand-in (no model, no calls)."""

    policy: str = "scripted"

    def play(self, cfg: LLMConfig, role: str, how: Play[T]) -> tuple[T, ModelClient | None]:
        return how.stand_in(cfg), None


def _local_wire(cfg: LLMConfig) -> Transport:
    if cfg.base_url == LOCAL_UNSTARTED:
        raise ConfigError(
            f"backend=local at {cfg.base_url}: no local model server was started for it (core.llm.local_server.serving)"
        )
    return OpenAIWire(cfg)


BACKENDS: dict[str, ModelBackend] = {  # `llm.backend` / `roles.<role>.backend` names one; a new backend is one line here
    Backend.openai: Chat(OpenAIWire),  # any OpenAI-compatible endpoint at base_url: a hosted API, a vLLM fleet
    Backend.local: Chat(_local_wire),  # a GGUF model core.llm.local_server serves on loopback for the entry point
    Backend.scripted: StandIns(),  # each role's rule-based stand-in, not a model
}


def check_backend(key: str, backend: str | None) -> None:
    if backend is not None and backend not in BACKENDS:
        raise ConfigError(f"{key}={backend}: unknown backend; known: {', '.join(BACKENDS)}")


def check_backends(cfg: DictConfig) -> None:
    """Every backend a config names (`llm.backend`, `roles.<role>.backend`) is in BACKENDS; ConfigError naming the key.
    Entry points call it after their config's `validate` (the config layer cannot see BACKENDS)."""
    llm = cfg.get("llm")
    if llm is None:
        return
    roles = (cfg.get("roles") or {}).items()
    for key, backend in [("llm.backend", llm.backend), *((f"roles.{r}.backend", o.backend) for r, o in roles)]:
        check_backend(key, backend)


def backend_of(cfg: LLMConfig) -> ModelBackend:
    check_backend("backend", cfg.backend)
    return BACKENDS[cfg.backend]


def policy_of(cfg: LLMConfig) -> str:
    """What plays an endpoint's role: "model", or "scripted" for the rule-based stand-ins."""
    return backend_of(cfg).policy


@dataclass
class Players:
    """The players one owner (a runner, a stage, a command) builds from its config; it checks and closes
    the model clients among them."""

    llm: LLMConfig = field(default_factory=LLMConfig)
    roles: Mapping[str, RoleConfig] = field(default_factory=dict)
    clients: list[Endpoint] = field(default_factory=list)

    def play(self, role: str, how: Play[T]) -> T:
        """`role`'s player (the backbone `llm` with the role's overrides, `roles.<role>`)."""
        return self.play_endpoint(resolve_role(self.llm, self.roles, role), role, how)

    def play_endpoint(self, cfg: LLMConfig, role: str, how: Play[T]) -> T:
        """The player of a role whose endpoint is resolved already (eval's judge and describer)."""
        player, client = backend_of(cfg).play(cfg, role, how)
        if client is not None:
            self.clients.append(client)
        return player

    async def check(self) -> None:
        """Each model endpoint lists its models before any work; EndpointUnreachable (bad input: nothing spent yet)
        naming the role and URL of one that does not."""
        for client in self.clients:
            try:
                await client.list_models()
            except ModelError as exc:
                raise EndpointUnreachable(exc) from exc

    async def aclose(self) -> None:
        clients, self.clients = self.clients, []
        await close_models(*clients)

    async def __aenter__(self) -> Players:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


async def check_endpoints(found: Mapping[str, LLMConfig]) -> None:
    """Each role's resolved endpoint lists its models (a stand-in has nothing to reach); clients closed after."""
    async with Players() as players:
        for role, cfg in found.items():
            players.play_endpoint(cfg, role, Play(lambda _: None, lambda _: None))
        await players.check()
