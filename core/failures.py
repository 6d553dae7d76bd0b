"""Why a rollout failed: the one table of failure categories, read by the agent loop, the pipeline, the report and
the docs (as `core/defects.py` is for defect codes).

A stored failure is `<kind>/<name>`, sometimes with a detail after a colon
(`environment/model_error:rate_limit`, `environment/infrastructure:OSError`). The kind says
whose the failure is: `environment` (a limit, the infrastructure, a model endpoint) or
`agent` (what the model did). `transient` says whether the cause lies outside the task and
the model, so that playing the task again may end otherwise.
"""

from __future__ import annotations

from enum import StrEnum
from typing import overload


class Failure(StrEnum):
    """One row per category: its stored code, whether it is transient, what it means."""

    transient: bool
    description: str

    @overload
    def __new__(cls, code: str) -> Failure: ...  # Failure(stored): the lookup of a member by its code (Enum's own)

    @overload
    def __new__(cls, code: str, transient: bool, description: str) -> Failure: ...  # a row of the table

    def __new__(cls, code: str, transient: bool = False, description: str = "") -> Failure:
        member = str.__new__(cls, code)
        member._value_, member.transient, member.description = code, transient, description
        return member

    crash = "environment/crash", False, "the agent loop raised: a bug of ours; the record ends where it stopped"
    step_limit = "environment/step_limit", False, "the agent used agent.max_steps turns without finishing"
    timeout = "environment/timeout", False, "the agent (agent.max_wall_s) or the rollout (rollouts.max_wall_s) ran out of time"
    token_limit = "environment/token_limit", False, "the agent spent agent.max_total_tokens without finishing"
    model_error = "environment/model_error", True, "the model endpoint failed for good (the detail: rate_limit, server, auth...)"
    unfinished = "environment/unfinished", False, "an agent ended without finalizing and recorded no reason"
    export_failed = "environment/export_failed", False, "the deck's slides could not be exported to PDF"
    infrastructure = "environment/infrastructure", True, "the worker raised outside the agents (the detail: the exception's type)"
    tool_crash = (
        "environment/tool_crash",
        True,
        "a tool raised an exception it does not document: a bug of ours (the detail: the tool)",
    )
    worker_died = "environment/worker_died", True, "the worker process died mid-rollout (Ray resubmits its rollouts)"
    no_deck = "environment/no_deck", False, "evaluation: the rollout left no deck to score"
    unreadable_deck = "environment/unreadable_deck", False, "evaluation: the deck could not be read for scoring"
    context_overflow = "agent/context_overflow", False, "the conversation outgrew the model's context window"
    budget = "agent/budget", False, "the rollout reached its spending cap (rollouts.max_cost_usd)"
    rambling = "agent/rambling", False, "turn after turn was cut at llm.max_tokens or the turn time limit"
    no_tool_calls = "agent/no_tool_calls", False, "turn after turn called no tool"
    loop = "agent/loop", False, "the same call(s), turn after turn"
    stalled = "agent/stalled", False, "turns went by with no progress (agents/guards.py)"

    @property
    def kind(self) -> str:
        """Whose failure it is: environment (a limit, the infrastructure, an endpoint) or agent (what the model did)."""
        return self.value.split("/", 1)[0]

    def detailed(self, detail: str) -> str:
        """The stored form with a detail: `environment/model_error:rate_limit`."""
        return f"{self.value}:{detail}"


def category_of(stored: str | None) -> Failure | None:
    """The category of a stored failure (its detail after the colon left out); None for one not in the table."""
    if not stored:
        return None
    try:
        return Failure(stored.split(":", 1)[0].strip())
    except ValueError:
        return None
