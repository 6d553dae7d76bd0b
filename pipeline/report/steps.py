"""A trajectory as a rollout page shows it: the prompts, then each step's reasoning, tool
calls with their arguments, observations (with the rendered images), critic injections
(findings and what the critic saw) and context-budget warnings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.budget import CONTEXT_WARNING
from core.records import CriticInjection, Message, Step, Trajectory

WARNING_MARK = CONTEXT_WARNING.split("{")[0]  # the warning the loop appends to an observation
LONG_ARGUMENT = 160  # characters: a longer argument (a file's content) is folded


@dataclass(frozen=True)
class Argument:
    name: str
    value: str
    long: bool


@dataclass(frozen=True)
class Call:
    name: str
    arguments: tuple[Argument, ...]


@dataclass(frozen=True)
class Note:
    """A message that is neither the model's nor a tool's: a prompt, a nudge, a relayed image."""

    role: str
    text: str
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class ObservationView:
    name: str
    text: str
    images: tuple[str, ...]  # workspace-relative
    warning: str  # a context-budget warning appended to it ('' if none)
    error: bool


@dataclass
class InjectionView:
    critic_model: str
    findings: list[dict[str, str]]
    tool: str
    artifact: str
    image: str  # workspace-relative, '' if the critic saw no image
    thought: str = ""


@dataclass
class StepView:
    number: int
    reasoning: str = ""
    content: str = ""
    calls: list[Call] = field(default_factory=list)
    observations: list[ObservationView] = field(default_factory=list)
    injections: list[InjectionView] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tokens: tuple[int, int] | None = None  # prompt, completion
    seconds: tuple[float, float] | None = None  # model, tools
    error: str = ""


@dataclass(frozen=True)
class TrajectoryView:
    agent: str
    model: str
    policy: str
    status: str
    failure: str
    outcome: str
    prompts: tuple[Note, ...]
    steps: tuple[StepView, ...]
    injections: int
    warnings: int
    tokens: int


def view(trajectory: Trajectory) -> TrajectoryView:
    injections = {i.message_index: i for i in trajectory.injections}
    timed = iter([s for s in trajectory.steps if s.error is None])
    prompts: list[Note] = []
    steps: list[StepView] = []
    for index, message in enumerate(trajectory.messages):
        if message.kind == "critic":
            _critic(steps, message, injections.get(index))
        elif message.role == "assistant":
            steps.append(_model_step(len(steps) + 1, message, next(timed, None)))
        elif message.role == "tool" and steps:
            steps[-1].observations.append(_observation(message))
        elif message.kind == "warning" and steps:
            steps[-1].warnings.append(message.content)
        elif steps:
            steps[-1].notes.append(Note(message.role, message.content, message.images))
        else:
            prompts.append(Note(message.role, message.content, message.images))
    steps += [StepView(len(steps) + 1, error=s.error or "") for s in trajectory.steps if s.error]
    return TrajectoryView(
        agent=trajectory.agent,
        model=trajectory.model,
        policy=trajectory.policy,
        status=trajectory.status,
        failure=trajectory.failure or "",
        outcome=trajectory.outcome or "",
        prompts=tuple(prompts),
        steps=tuple(steps),
        injections=len(trajectory.injections),
        warnings=sum(len(s.warnings) + sum(bool(o.warning) for o in s.observations) for s in steps),
        tokens=trajectory.usage.total,
    )


def _model_step(number: int, message: Message, step: Step | None) -> StepView:
    return StepView(
        number=number,
        reasoning=message.reasoning or "",
        content=message.content,
        calls=[Call(c.name, arguments(c.arguments)) for c in message.tool_calls],
        tokens=(step.usage.prompt_tokens, step.usage.completion_tokens) if step else None,
        seconds=(step.model_s, step.tools_s) if step else None,
    )


def arguments(text: str) -> tuple[Argument, ...]:
    """A call's JSON arguments one by one (strings as written); malformed JSON is shown verbatim."""
    try:
        parsed: Any = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return (Argument("(malformed JSON)", text, len(text) > LONG_ARGUMENT),)
    if not isinstance(parsed, dict):
        parsed = {"(arguments)": parsed}
    found = []
    for name, value in parsed.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        found.append(Argument(str(name), shown, len(shown) > LONG_ARGUMENT or "\n" in shown))
    return tuple(found)


def _observation(message: Message) -> ObservationView:
    text, _, warning = message.content.partition(WARNING_MARK)
    return ObservationView(
        name=message.name or "tool",
        text=text,
        images=message.images,
        warning=(WARNING_MARK + warning).strip() if warning else "",
        error=text.startswith("Error: "),
    )


def _critic(steps: list[StepView], message: Message, record: CriticInjection | None) -> None:
    """The critic's `thinking` call opens an injection (with its record); its result is the thought."""
    if not steps:
        steps.append(StepView(1))
    if message.role == "assistant":
        tool, artifact, image = (record.observation_ref.split(":", 2) + ["", ""])[:3] if record else ("", "", "")
        steps[-1].injections.append(
            InjectionView(
                record.critic_model if record else "", findings(record.findings_json) if record else [], tool, artifact, image
            )
        )
    elif steps[-1].injections:
        steps[-1].injections[-1].thought = message.content


def findings(text: str) -> list[dict[str, str]]:
    """The critic's findings (category, severity, evidence, fix); unreadable JSON becomes one finding."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return [{"evidence": text}]
    items = parsed if isinstance(parsed, list) else [parsed]
    return [{str(k): str(v) for k, v in item.items()} if isinstance(item, dict) else {"evidence": str(item)} for item in items]
