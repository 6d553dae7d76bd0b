"""The agent loop: ask the model, run its tool calls, repeat until finalize succeeds or a limit is hit."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Callable, Sequence

from agents.budget import ContextBudget
from agents.config import AgentConfig
from agents.guards import Guards, GuardTripped
from agents.tools.registry import ToolContext, ToolCrashed, Toolset
from core.failures import Failure
from core.llm.results import ModelError
from core.protocols import Model, StepHook
from core.records import CriticInjection, Message, Step, ToolCall, Trajectory, TrajectoryStatus
from core.seams.steps import Injection, Observation, StepState


class AgentEnded(Exception):
    """How a run ended; raised inside the loop only."""

    status = TrajectoryStatus.failed

    def __init__(self, failure: str | None = None, outcome: str | None = None):
        super().__init__(failure or outcome)
        self.failure, self.outcome = failure, outcome


class Finalized(AgentEnded):
    status = TrajectoryStatus.finalized


class LimitReached(AgentEnded): ...


class ContextOverflow(AgentEnded): ...


class ModelFailed(AgentEnded): ...


class Degenerate(AgentEnded):
    """A guard (agents/guards.py) saw the model going nowhere."""


class ToolCrash(AgentEnded):
    """A tool raised what it does not document (agents.tools.registry.ToolCrashed)."""


class BudgetSpent(AgentEnded):
    """The rollout spent its cap (`rollouts.max_cost_usd`): the model is not called again."""


class Agent:
    """One agent on one task: `await Agent(...).run(system, user)` returns its trajectory."""

    def __init__(
        self,
        model: Model,
        toolset: Toolset,
        ctx: ToolContext,
        config: AgentConfig,
        task_id: str,
        hooks: Sequence[StepHook] = (),
        save: Callable[[Trajectory], None] | None = None,
    ):
        self.model, self.toolset, self.ctx, self.config, self.hooks, self.save = model, toolset, ctx, config, hooks, save
        self.schemas = toolset.schemas()
        self.record = Trajectory(
            task_id=task_id,
            agent=ctx.role,
            model=model.name,
            tools_json=json.dumps(self.schemas),
            profile=model.profile,
            vision=model.vision,
        )
        self.messages: list[Message] = []
        self.steps: list[Step] = []
        self.injections: list[CriticInjection] = []
        self.budget = ContextBudget(
            min(config.context_window, model.context_window or config.context_window), config.warn_fractions
        )
        informing = [name for name, tool in toolset.tools.items() if tool.informs]
        self.guards = Guards(config.guards, ctx.workspace.root, list(toolset.tools), informing)
        self.started = time.monotonic()
        self.saved_at = -float("inf")

    def start(self, system: str, user: str) -> None:
        self.messages = [Message("system", system, kind="prompt"), Message("user", user, kind="prompt")]
        self.started = time.monotonic()

    async def run(self, system: str, user: str) -> Trajectory:
        self.start(system, user)
        end = AgentEnded(Failure.crash)  # what a crash leaves in the record
        try:
            while True:
                await self.step()
        except AgentEnded as exc:
            end = exc
        finally:
            trajectory = self.trajectory(end)
            if self.save:
                self.save(trajectory)
        return trajectory

    async def step(self) -> None:
        self._check_limits()
        index, started, t0 = len(self.steps), time.time(), time.perf_counter()
        try:
            reply = await self.model.chat(self.messages, self.schemas, image_root=self.ctx.workspace.root)
        except ModelError as exc:
            self._model_failed(Step(index, started, time.perf_counter() - t0, 0.0, error=f"model_error:{exc.kind}"), exc)
            return
        t1 = time.perf_counter()
        calls = reply.tool_calls
        names = tuple(c.name for c in calls)
        self.messages.append(
            Message("assistant", reply.content, reasoning=reply.reasoning, tool_calls=calls, sent=reply.request_digest)
        )
        self.budget.update(reply.usage, len(self.messages))
        try:
            observations = await self._execute(calls)
        except ToolCrashed as exc:
            error = f"tool_crash:{exc.tool}"
            self.steps.append(Step(index, started, t1 - t0, time.perf_counter() - t1, reply.usage, names, error=error))
            raise ToolCrash(Failure.tool_crash.detailed(exc.tool)) from exc
        cut = f"at llm.max_tokens, {reply.usage.completion_tokens} tokens" if reply.finish_reason == "length" else None
        tripped: GuardTripped | None = None
        try:
            note = self.guards.observe(calls, observations, cut)
        except GuardTripped as exc:
            tripped, note = exc, ""
        self._observe(calls, observations, self.budget.warning(), note)
        progress = self.guards.progressed
        self.steps.append(Step(index, started, t1 - t0, time.perf_counter() - t1, reply.usage, names, progress=progress))
        for call, observation in zip(calls, observations):
            if call.name == "finalize" and not observation.is_error:
                raise Finalized(outcome=json.loads(call.arguments)["outcome"])
        if tripped:
            raise Degenerate(tripped.failure) from tripped
        for hook in self.hooks:
            self._inject(index, await hook.after_step(StepState(index, calls, observations, self.ctx.workspace.root)))
        if self.save and time.monotonic() - self.saved_at >= self.config.save_interval_s:
            self.saved_at = time.monotonic()
            self.save(self.trajectory())

    def trajectory(self, end: AgentEnded | None = None) -> Trajectory:
        status, failure, outcome = (end.status, end.failure, end.outcome) if end else ("running", None, None)
        messages, steps, injections = tuple(self.messages), tuple(self.steps), tuple(self.injections)
        return replace(
            self.record, messages=messages, steps=steps, injections=injections, status=status, failure=failure, outcome=outcome
        )

    def _check_limits(self) -> None:
        cfg = self.config
        if len(self.steps) >= cfg.max_steps:
            raise LimitReached(Failure.step_limit)
        if time.monotonic() - self.started > cfg.max_wall_s:
            raise LimitReached(Failure.timeout)
        if sum(s.usage.total for s in self.steps) >= cfg.max_total_tokens:
            raise LimitReached(Failure.token_limit)
        if self.budget.used(self.messages) > self.budget.window:
            raise ContextOverflow(Failure.context_overflow)

    def _model_failed(self, step: Step, exc: ModelError) -> None:
        """A turn without a reply: a cut (turn timeout) the rambling guard counts; else the agent ends."""
        self.steps.append(step)
        if exc.kind == "turn_timeout":
            try:
                note = self.guards.cut("no reply within the turn time limit")
            except GuardTripped as tripped:
                raise Degenerate(tripped.failure) from exc
            self.messages.append(Message("user", note, kind="warning"))
            return
        if exc.kind == "context_length":  # the model filled the window the server gives it
            raise ContextOverflow(Failure.context_overflow) from exc
        if exc.kind == "budget":
            raise BudgetSpent(Failure.budget) from exc
        raise ModelFailed(Failure.model_error.detailed(exc.kind)) from exc

    async def _execute(self, calls: tuple[ToolCall, ...]) -> tuple[Observation, ...]:
        limit = self.config.max_tool_calls_per_turn
        results = await asyncio.gather(*(self.toolset.call(self.ctx, call) for call in calls[:limit]), return_exceptions=True)
        for result in results:  # every call of the turn has ended before a crash ends the agent
            if isinstance(result, BaseException):
                raise result
        run = [r for r in results if isinstance(r, Observation)]
        skipped = Observation(f"Not run: at most {limit} tool calls run per turn; repeat it in your next turn.", is_error=True)
        return (*run, *[skipped] * (len(calls) - limit))

    def _observe(self, calls: tuple[ToolCall, ...], observations: tuple[Observation, ...], warning: str, note: str) -> None:
        """The tool results (the context warning after the last), then a guard's note, if any."""
        for i, (call, obs) in enumerate(zip(calls, observations)):
            text = ("Error: " if obs.is_error else "") + obs.text + (warning if i == len(calls) - 1 else "")
            self.messages.append(Message("tool", text, obs.images, tool_call_id=call.id, name=call.name, kind="tool"))
        if note or (warning and not calls):
            self.messages.append(Message("user", note + (warning if not calls else ""), kind="warning"))

    def _inject(self, step: int, injections: list[Injection]) -> None:
        for injection in injections:
            call = ToolCall(
                f"critic_{len(self.messages)}", "thinking", json.dumps({"thought": injection.thought}, ensure_ascii=False)
            )
            self.injections.append(
                CriticInjection(
                    step, len(self.messages), injection.critic_model, injection.findings_json, injection.observation_ref
                )
            )
            self.messages.append(Message("assistant", tool_calls=(call,), kind="critic"))
            self.messages.append(Message("tool", injection.thought, tool_call_id=call.id, name="thinking", kind="critic"))
