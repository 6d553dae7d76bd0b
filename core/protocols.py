"""The protocols at the project's seams, each with its one-line contract. Everything else depends on these.

| seam | who implements it | contract |
|---|---|---|
| Model | core.llm.ModelClient, agents.policies.scripted.ScriptedPolicy | answer one chat turn (tool calls, reasoning, usage) |
| Endpoint | core.llm.ModelClient (core.models.BACKENDS builds them) | a Model behind a connection: says what it serves, closes |
| Transport | core.llm.OpenAIWire, a new backend's own | carry one chat-completions request and bring back its reply |
| StepHook | critic.critic.CriticHook | after each agent step, return what to inject into the agent's context |
| Critic | critic.critic.ModelCritic, RulesCritic | review one inspection in isolation: findings, never the agent's history |
| Gate | filters.constraints / content / consistency / quality | judge one finished rollout: one Verdict |
| Runner | pipeline.runner.DeckRunner, eval.runner.EvalRunner | play one task in its workspace: one Rollout; one per worker process |

What they pass are core's records too (`core.steps`, `core.review`, `core.candidate`): core imports none of ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

from core.candidate import Candidate
from core.llm_types import ChatResult
from core.records import Message, Rollout, Task, Verdict
from core.review import Inspection, Review
from core.steps import Injection, StepState


@runtime_checkable
class Model(Protocol):
    """Anything that answers a chat turn: an OpenAI-compatible endpoint or the scripted policy."""

    name: str
    context_window: int | None  # tokens the model can hold, where known (the agent's budget warns against it)
    profile: str  # the endpoint profile its requests follow (core.conversation.PROFILES); a sample follows it too
    vision: bool  # whether it reads images (else each image is named in text)

    async def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict] | None = None,
        image_root: Path | None = None,
    ) -> ChatResult: ...


class Endpoint(Model, Protocol):
    """A Model behind a connection: it lists what it serves (so a run checks it before spending) and is closed after use."""

    async def list_models(self) -> list[str]: ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """How a backend carries one chat request: OpenAI's chat-completions body in (as the endpoint's profile
    shaped it) for the replica at `base_url` (one of `llm.base_url`, chosen by `core.fleet`), OpenAI's
    chat.completion object out. Replica choice and admission, retries, budget, metering, price and provenance
    are the client's (`core.llm.ModelClient`), the same for every transport. A failure the client may retry is
    raised as `core.llm.EndpointError` (with the status a server would send) or a connection/timeout error."""

    async def complete(self, body: dict[str, Any], base_url: str) -> dict[str, Any]: ...

    async def models(
        self, base_url: str
    ) -> list[dict[str, Any]]: ...  # the served models, `{"id": ...}` each (`max_model_len` where known)

    async def aclose(self) -> None: ...


class StepHook(Protocol):
    """Called after each agent step; what it returns is put into the agent's context (the critic's injections)."""

    async def after_step(self, state: StepState) -> list[Injection]: ...


class Critic(Protocol):
    """Reviews one inspection with nothing but that inspection (never the agent's history)."""

    name: str

    async def review(self, inspection: Inspection, workspace: Path, language: str) -> Review: ...


class Gate(Protocol):
    """Judges one finished rollout; listed in filters.registry.GATES."""

    name: str

    async def judge(self, candidate: Candidate) -> Verdict: ...


class Runner(Protocol):
    """Plays one task in its workspace; one instance per worker process (`rollouts.runner` names the class),
    made with (cfg, run_dir). Its model calls count into the rollout's unit (core.metering)."""

    async def start(self) -> None: ...

    async def rollout(self, task: Task, workspace: Path) -> Rollout: ...

    async def close(self) -> None: ...
