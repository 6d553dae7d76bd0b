"""The synthesis runner: one worker's renderer, models and research state; plays tasks with the critic on.

Loaded by the rollout workers (`rollouts.runner`). Each rollout is a unit (core.metering):
every model call it makes (agents, critic, research tools) counts into it, so that its record
carries its tokens and cost by role.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from deck.export import page_reader
from agents.workflow import AGENT, DeckOutcome, ModelFor, environment, generate_deck
from core.protocols import Critic, StepHook
from render.renderer import Renderer
from agents.research.runtime import Research, build_research
from core.metering import part_scope
from core.models import Players
from core.records import Rollout, Task, Trajectory
from core.usage import RoleUsage
from critic.critic import CRITIC, CriticHook, make_critic_hook
from critic.config import CriticMode
from pipeline.config import SynthesizeConfig


class DeckRunner:
    def __init__(self, cfg: SynthesizeConfig, run_dir: Path):
        self.cfg = cfg
        self.run_dir = run_dir
        rollouts = run_dir / "rollouts"  # the rollouts' workspaces: all the jailed browser sees of the run
        rollouts.mkdir(parents=True, exist_ok=True)
        self.renderer = Renderer(cfg.render, roots=[rollouts], read_page=page_reader(cfg.deck))
        self.players = Players(cfg.llm, cfg.roles)
        self.research: Research | None = None
        self.model: ModelFor | None = None  # the model playing an agent role in one rollout
        self.critic: Critic | None = None  # the extrinsic critic (critic=extrinsic)

    async def start(self) -> None:
        await self.renderer.__aenter__()
        self.research = build_research(self.cfg.tools, self.run_dir, self.players)
        self.model = self.players.play("agent", AGENT)
        if CriticMode(self.cfg.critic.mode) is CriticMode.extrinsic:
            self.critic = self.players.play("critic", CRITIC)
        await self.players.check()  # reachable, and the agent's context window where the server states it

    async def close(self) -> None:
        await self.renderer.__aexit__(None, None, None)
        await self.players.aclose()

    def _critic(self, language: str) -> CriticHook | None:
        return make_critic_hook(self.cfg.critic.mode, self.critic, self.cfg.critic.min_severity, language)

    async def rollout(self, task: Task, workspace: Path) -> Rollout:
        hooks: list[CriticHook] = []

        def hooks_for(role: str) -> Sequence[StepHook]:
            hook = self._critic(task.language)
            hooks.extend([hook] if hook else [])
            return [hook] if hook else []

        with part_scope() as unit:  # the worker's unit for this rollout (a unit of its own when played alone)
            env = environment(self.cfg, self.renderer, self.research, self.model, hooks_for)
            outcome = await generate_deck(task, workspace, env)
        return rollout_record(task, workspace.relative_to(self.run_dir), outcome, unit.usage(), hooks, env.policy)


def rollout_record(
    task: Task, folder: Path, outcome: DeckOutcome, usage: dict[str, RoleUsage], hooks: list[CriticHook], policy: str
) -> Rollout:
    """The Rollout row: status, artifacts (run-relative), steps, tools, injections, tokens and cost per role."""
    prompt = {role: u.prompt_tokens for role, u in usage.items()}
    completion = {role: u.completion_tokens for role, u in usage.items()}
    for t in outcome.trajectories:  # the scripted policy makes no model calls: count its estimated tokens
        if t.policy == "scripted":
            prompt[t.agent] = t.usage.prompt_tokens
            completion[t.agent] = t.usage.completion_tokens
    findings: Counter = Counter()
    for hook in hooks:
        findings.update(hook.findings)
    return Rollout(
        task_id=task.task_id,
        status=outcome.status,
        failure=outcome.failure,
        artifacts={name: (folder / path).as_posix() for name, path in outcome.artifacts.items()},
        steps={t.agent: len(t.steps) for t in outcome.trajectories},
        tool_counts=dict(_tool_counts(outcome.trajectories)),
        injections=sum(len(t.injections) for t in outcome.trajectories),
        findings=dict(findings),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=sum(u.cost_usd for u in usage.values()),
        policy=policy,
        usage=usage,
    )


def _tool_counts(trajectories: list[Trajectory]) -> Counter:
    return Counter(c.name for t in trajectories for m in t.messages if m.kind == "model" for c in m.tool_calls)
