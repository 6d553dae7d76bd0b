"""One agent trajectory -> MS-SWIFT agent-format samples that show the model what it was shown.

The trajectory's records become the conversation its model read (`core.llm.conversation`, under
the profile its requests followed), and that conversation becomes the sample, so each
trained turn's context is the request the teacher answered (`python -m train.parity`
checks it token by token). MS-SWIFT keeps only role, content and loss of each message, so:
- reasoning goes inline as `<think>...</think>\n` before the assistant's content: on the
  trained turn always, on a past turn only where the profile's template shows it;
- each tool call is a `tool_call` message, `{"name", "arguments"}` with the arguments
  as an object (the GLM agent template renders them key by key);
- a message's images become `<image>` tags after its text, as MS-SWIFT reads a request's
  image parts; `images` lists the files in tag order;
- a critic injection (messages of kind "critic") reads as the agent's own `thinking`
  call, trained on unless `mask_critic` gives it `"loss": false`; a turn whose call was
  not a JSON object is context only (`"loss": false`: the history shows `{}`).
Where a template hides reasoning it showed before (GLM templates drop the reasoning of
turns before the last user message), one sequence cannot hold both views: the trajectory
is split there, and each later part repeats the history as the model then read it, with
`"loss": false` (`export.history_reasoning=keep` keeps one sample instead, the reasoning in
the context: the named difference `history_reasoning`). Literal placeholder tags in text (an HTML `<video>` tag, say) are
defused so that they can never be taken for media.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from core.llm.conversation import (
    DEFAULT_PROFILE,
    PastReasoning,
    Profile,
    Turn,
    conversation,
    profile_named,
    reasoning_shown,
)
from core.records import Origin, ToolCall, Trajectory
from core.run.blobs import is_blob_ref

IMAGE_TAG = "<image>"
# MS-SWIFT's Template.special_tokens, and `<img>` of its legacy `<img>path</img>` form.
SWIFT_TAGS = ("image", "video", "audio", "bbox", "ref-object", "cot-process", "start-image", "img")
_LITERAL_TAG = re.compile(r"<(/?)(" + "|".join(re.escape(t) for t in SWIFT_TAGS) + r")>")


class SampleError(ValueError):
    """A trajectory that cannot become a training sample (the reason names the message)."""


@dataclass(frozen=True)
class SwiftMessage:
    role: str  # system | user | assistant | tool_call | tool_response
    content: str
    images: tuple[Path, ...] = ()  # absolute source files of this message's <image> placeholders
    loss: Optional[bool] = None  # None: MS-SWIFT's default (assistant and tool_call trained)
    critic: bool = False  # written by the isolated critic (not serialized: it reads as the agent's own)
    source: Optional[int] = None  # the index of the record it came from (not serialized)
    context: bool = False  # history repeated from an earlier part of the trajectory (not serialized)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.loss is not None:
            out["loss"] = self.loss
        return out


@dataclass(frozen=True)
class Sample:
    task_id: str
    agent: str
    policy: str
    tools_json: str
    messages: tuple[SwiftMessage, ...]
    origin: Origin = field(default_factory=Origin)  # the trajectory's templates and models
    part: int = 0  # which part of its trajectory (more than one where hidden reasoning split it)

    @property
    def images(self) -> tuple[Path, ...]:
        return tuple(image for m in self.messages for image in m.images)

    @property
    def critic_calls(self) -> int:
        return sum(1 for m in self.messages if m.role == "tool_call" and m.critic and not m.context)

    def cut_points(self) -> list[int]:
        """Message counts at which a prefix ends on a whole trained agent turn (before the next observation)."""
        points = []
        for i, message in enumerate(self.messages):
            nxt = self.messages[i + 1].role if i + 1 < len(self.messages) else None
            trained = message.role in ("assistant", "tool_call") and message.loss is not False
            if trained and nxt not in ("assistant", "tool_call"):
                points.append(i + 1)
        return points

    def prefix(self, n_messages: int) -> Sample:
        return replace(self, messages=self.messages[:n_messages])

    def to_swift(self, image_path: Callable[[Path], str] = str) -> dict[str, Any]:
        """The JSONL row; `image_path` maps each source image to the path written in the row."""
        return {
            "task_id": self.task_id,  # for people and tools; MS-SWIFT's loader drops unknown keys
            "agent": self.agent,
            "part": self.part,
            "tools": self.tools_json,
            "messages": [m.to_dict() for m in self.messages],
            "images": [image_path(p) for p in self.images],
        }


def defuse_tags(text: str) -> str:
    """`<image>` -> `<image >` (and the other MS-SWIFT tags): shown as written, never parsed as media."""
    return _LITERAL_TAG.sub(lambda m: f"<{m.group(1)}{m.group(2)} >", text)


def _with_images(text: str, images: tuple[str, ...], root: Path) -> tuple[str, tuple[Path, ...]]:
    text = defuse_tags(text)
    if not images:
        return text, ()
    files = tuple((root / p).resolve() for p in images)
    for name, file in zip(images, files, strict=True):
        if not file.is_relative_to(root.resolve()) and not is_blob_ref(name):
            raise SampleError(f"image {name!r} lies outside the workspace and is not one of the run's blobs")
    return text + IMAGE_TAG * len(images), files


def assistant_text(content: str, reasoning: str | None) -> str:
    """An assistant message as MS-SWIFT reads it: its reasoning inline, as GLM renders it."""
    if reasoning and reasoning.strip():
        return f"<think>{reasoning.strip()}</think>\n{content.strip()}"
    return content


def _tool_call(call: ToolCall, loss: Optional[bool], critic: bool, source: Optional[int]) -> SwiftMessage:
    content = json.dumps({"name": call.name, "arguments": json.loads(call.arguments)}, ensure_ascii=False)
    return SwiftMessage("tool_call", defuse_tags(content), loss=loss, critic=critic, source=source)


def _convert(turn: Turn, root: Path, trained: bool, show_reasoning: bool, mask_critic: bool) -> list[SwiftMessage]:
    if turn.role in ("system", "user", "tool"):
        content, images = _with_images(turn.text, turn.images, root)
        return [SwiftMessage("tool_response" if turn.role == "tool" else turn.role, content, images, source=turn.source)]
    if turn.role != "assistant":
        raise SampleError(f"a {turn.role!r} message: unknown role")
    if turn.images:
        raise SampleError("an assistant message cannot carry images")
    critic = turn.kind == "critic"
    loss = None if trained and not (critic and mask_critic) and not turn.malformed else False
    content = defuse_tags(assistant_text(turn.text, turn.reasoning if show_reasoning else None))
    out = (
        [SwiftMessage("assistant", content, loss=loss, critic=critic, source=turn.source)]
        if content or not turn.tool_calls
        else []
    )
    return out + [_tool_call(call, loss, critic, turn.source) for call in turn.tool_calls]


class _Parts:
    """The samples of one conversation, built turn by turn (see the module's note on splitting)."""

    def __init__(self, turns: list[Turn], profile: Profile, root: Path, mask_critic: bool):
        self.turns, self.profile, self.root, self.mask_critic = turns, profile, root, mask_critic
        self.parts: list[list[SwiftMessage]] = []
        self.current: list[SwiftMessage] = []
        self.shown: dict[int, bool] = {}  # assistant turns with reasoning in the current part -> rendered with it

    def add(self, index: int) -> None:
        turn = self.turns[index]
        if turn.role != "assistant":
            self.current += _convert(turn, self.root, False, False, self.mask_critic)
            return
        seen = reasoning_shown(self.turns[:index], self.profile)  # what the model read when it wrote this turn
        if any(shown != (j in seen) for j, shown in self.shown.items()):
            self.parts.append(self.current)
            self.current = [m for j in range(index) for m in self._context(j, seen)]
            self.shown = {j: j in seen for j in range(index) if self.turns[j].reasoning}
        self.current += _convert(turn, self.root, True, True, self.mask_critic)
        if turn.reasoning:
            self.shown[index] = True

    def _context(self, index: int, seen: frozenset[int]) -> list[SwiftMessage]:
        return [replace(m, context=True) for m in _convert(self.turns[index], self.root, False, index in seen, self.mask_critic)]

    def samples(self, trajectory: Trajectory) -> list[Sample]:
        out: list[Sample] = []
        for messages in [*self.parts, self.current]:
            sample = Sample(
                trajectory.task_id,
                trajectory.agent,
                trajectory.policy,
                trajectory.tools_json,
                tuple(messages),
                trajectory.origin,
                len(out),
            )
            cuts = sample.cut_points()
            if cuts:  # the observation after the last trained call (finalize's) teaches nothing
                out.append(sample.prefix(cuts[-1]))
        return out


def profile_of(trajectory: Trajectory, fallback: str | None = None) -> Profile:
    """The profile a trajectory's requests followed; `fallback` (else the default) for one written before profiles."""
    return profile_named(trajectory.profile or fallback or DEFAULT_PROFILE)


def to_samples(
    trajectory: Trajectory,
    workspace: Path,
    mask_critic: bool = False,
    profile: str | None = None,
    keep_reasoning: bool = False,
) -> list[Sample]:
    """The MS-SWIFT samples of one trajectory (one, unless reasoning hidden later splits it); image paths
    resolve against its workspace. `profile` names the profile of trajectories that record none;
    `keep_reasoning` keeps one sample, every past turn's reasoning in the context (export.history_reasoning=keep)."""
    followed = profile_of(trajectory, profile)
    turns = conversation(trajectory.messages, followed, trajectory.vision)
    if not any(t.role == "user" for t in turns):
        raise SampleError("no user message")
    view = replace(followed, past_reasoning=PastReasoning.every) if keep_reasoning else followed
    parts = _Parts(turns, view, workspace, mask_critic)
    for index in range(len(turns)):
        try:
            parts.add(index)
        except SampleError as exc:
            raise SampleError(f"message {index} ({turns[index].role}): {exc}") from exc
    samples = parts.samples(trajectory)
    if not samples:
        raise SampleError("no assistant turn to train on")
    for image in (image for sample in samples for image in sample.images):
        if not image.is_file():
            raise SampleError(f"image {image} is missing")
    return samples
