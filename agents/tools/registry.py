"""Tools: typed async functions whose OpenAI schema comes from their signature.

A tool is `async def name(ctx: ToolContext, arg: T, ...) -> Observation | str`;
its docstring is the description and each argument's `Annotated[T, Field(...)]`
gives its type, constraints and description. `Tool.from_function(fn, *roles)`
describes one; a tool module ends with `TOOLS`, the tools it offers, and
`agents.tools.toolsets` lists those lists and hands each role its toolset.
Whatever a call does wrong (bad JSON, a bad argument, a ToolError, a timeout)
comes back as an error observation the model can read and act on; any other exception
is a bug of ours, not the model's to fix: it raises ToolCrashed, which ends the rollout.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import typing
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Awaitable, Callable, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agents.config import SandboxConfig
from agents.sandbox import SandboxError, Workspace
from core.records import ToolCall
from core.seams.steps import Observation

log = logging.getLogger(__name__)

ROLES = ("researcher", "presenter")  # "single" gets the union
OUTPUTS_DIR = ".outputs"


class ToolError(Exception):
    """A failure the model can fix; its message is the observation."""


class ToolCrashed(Exception):
    """A tool raised an exception it does not document (logged with its stack): the rollout ends as
    `environment/tool_crash`, so no trajectory teaches a model our stack traces."""

    def __init__(self, tool: str, exc: BaseException):
        super().__init__(f"{tool} raised {type(exc).__name__}: {exc}")
        self.tool = tool


@dataclass
class ToolContext:
    """What a tool call may reach: its workspace, its role and shared resources (renderer, constraints, ...)."""

    workspace: Workspace
    role: str
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def sandbox(self) -> SandboxConfig:
        return self.workspace.config


ToolFn = Callable[..., Awaitable["Observation | str"]]


def _call_timeout(cfg: SandboxConfig) -> float:
    return cfg.call_timeout_s


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _explain(exc: ValidationError) -> str:
    return "\n".join(f"- {'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False))


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    fn: ToolFn
    roles: tuple[str, ...] = ()  # the roles it is offered to ("single" gets every role's)
    truncate: bool = True  # False for tools that page their own output (read_file)
    timeout_s: Callable[[SandboxConfig], float] = _call_timeout
    informs: bool = True  # a result not seen before is progress (agents/guards.py); not for notes and the todo list

    @classmethod
    def from_function(cls, fn: ToolFn, *roles: str, **options: Any) -> Tool:
        """The tool `fn` is, offered to `roles` (options: truncate, timeout_s, informs)."""
        unknown = set(roles) - set(ROLES)
        if unknown:
            raise ValueError(f"{fn.__name__}: unknown role(s) {sorted(unknown)}; roles are {ROLES}")
        hints = typing.get_type_hints(fn, include_extras=True)
        params = list(inspect.signature(fn).parameters.values())[1:]  # the first one is the context
        fields: dict[str, Any] = {p.name: (hints[p.name], ... if p.default is p.empty else p.default) for p in params}
        model = create_model(f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        return cls(fn.__name__, inspect.getdoc(fn) or "", model, fn, roles, **options)

    @cached_property
    def schema(self) -> dict[str, Any]:
        parameters = _strip_titles(self.arguments.model_json_schema())
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}

    def parse(self, raw: str) -> dict[str, Any]:
        try:
            data = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ToolError(f"The arguments of {self.name} are not valid JSON ({exc}); send one JSON object.") from exc
        if not isinstance(data, dict):
            raise ToolError(f"The arguments of {self.name} must be a JSON object, not {type(data).__name__}.")
        try:
            return dict(self.arguments.model_validate(data))
        except ValidationError as exc:
            raise ToolError(f"Invalid arguments for {self.name}:\n{_explain(exc)}\nFix them and call {self.name} again.") from exc

    async def run(self, ctx: ToolContext, raw_arguments: str) -> Observation:
        try:
            arguments = self.parse(raw_arguments)
            async with asyncio.timeout(self.timeout_s(ctx.sandbox)):
                result = await self.fn(ctx, **arguments)
        except (ToolError, SandboxError) as exc:
            return Observation(str(exc), is_error=True)
        except TimeoutError:
            return Observation(
                f"{self.name} did not finish within {self.timeout_s(ctx.sandbox):g} s and was stopped.", is_error=True
            )
        except Exception as exc:
            log.warning("tool %s crashed on %.200s", self.name, raw_arguments, exc_info=True)
            raise ToolCrashed(self.name, exc) from exc
        observation = result if isinstance(result, Observation) else Observation(result)
        if self.truncate and len(observation.text) > ctx.sandbox.max_output_chars:
            return _spill(ctx, self.name, observation)
        return observation


def _spill(ctx: ToolContext, tool_name: str, observation: Observation) -> Observation:
    """Cut a long text at a line boundary and keep the whole of it in the workspace."""
    text, limit = observation.text, ctx.sandbox.max_output_chars
    cut = text[:limit]
    if (newline := cut.rfind("\n")) > limit // 2:
        cut = cut[: newline + 1]
    data = text.encode()
    for n in itertools.count(1):
        path = f"{OUTPUTS_DIR}/{tool_name}_{n}.txt"
        if _holds(ctx, path, data):  # the same output again (a page read twice): one copy, and the same note
            break
        try:
            ctx.workspace.write_bytes(path, data, mode="create")
            break
        except SandboxError as exc:
            if not isinstance(exc.__cause__, FileExistsError):
                raise
    note = (
        f"\n[output cut: showing {len(cut):,} of {len(text):,} characters. The whole output is in {path}; "
        f'read the rest with read_file(path="{path}", offset={len(cut)})]'
    )
    return Observation(cut + note, observation.images, observation.is_error)


def _holds(ctx: ToolContext, path: str, data: bytes) -> bool:
    found = ctx.workspace.stat(path)
    return found is not None and found.st_size == len(data) and ctx.workspace.read_bytes(path, len(data)) == data


# ---------------------------------------------------------------- toolsets


@dataclass(frozen=True)
class Toolset:
    """The tools one agent may call, by name."""

    tools: Mapping[str, Tool]

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> Toolset:
        return cls({t.name: t for t in tools})

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self.tools.values()]

    async def call(self, ctx: ToolContext, call: ToolCall) -> Observation:
        found = self.tools.get(call.name)
        if found is None:
            return Observation(f"There is no tool {call.name!r}. Available tools: {', '.join(self.tools)}.", is_error=True)
        return await found.run(ctx, call.arguments)
