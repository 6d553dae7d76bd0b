"""One agent trajectory -> one MS-SWIFT agent-format sample.

MS-SWIFT keeps only role, content and loss of each message, so:
- reasoning goes inline as `<think>...</think>\\n` before the assistant's content;
- each tool call is a `tool_call` message, `{"name", "arguments"}` with the arguments
  as an object (the GLM agent template renders them key by key);
- each image becomes an `<image>` placeholder at the end of the message that carried
  it (a rendered slide stays inside its `tool_response`), and `images` lists the files
  in placeholder order;
- a critic injection (messages of kind "critic") reads as the agent's own `thinking`
  call, trained on unless `mask_critic` gives it `"loss": false`.
Literal placeholder tags in text (an HTML `<video>` tag, say) are defused so that they
can never be taken for media.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from core.records import Message, Origin, ToolCall, Trajectory

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

    @property
    def images(self) -> tuple[Path, ...]:
        return tuple(image for m in self.messages for image in m.images)

    @property
    def critic_calls(self) -> int:
        return sum(1 for m in self.messages if m.role == "tool_call" and m.critic)

    def cut_points(self) -> list[int]:
        """Message counts at which a prefix ends on a whole agent turn (before the next observation)."""
        points = []
        for i, message in enumerate(self.messages):
            nxt = self.messages[i + 1].role if i + 1 < len(self.messages) else None
            if message.role in ("assistant", "tool_call") and nxt not in ("assistant", "tool_call"):
                points.append(i + 1)
        return points

    def prefix(self, n_messages: int) -> Sample:
        return replace(self, messages=self.messages[:n_messages])

    def to_swift(self, image_path: Callable[[Path], str] = str) -> dict[str, Any]:
        """The JSONL row; `image_path` maps each source image to the path written in the row."""
        return {
            "task_id": self.task_id,  # for people and tools; MS-SWIFT's loader drops unknown keys
            "agent": self.agent,
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
        if not file.is_relative_to(root.resolve()):
            raise SampleError(f"image {name!r} lies outside the workspace")
    tags = "\n".join(IMAGE_TAG for _ in images)
    return (f"{text}\n{tags}" if text else tags), files


def _assistant_content(message: Message) -> str:
    content = defuse_tags(message.content or "")
    if message.reasoning and message.reasoning.strip():
        return f"<think>{defuse_tags(message.reasoning.strip())}</think>\n{content.strip()}"
    return content


def _arguments(call: ToolCall, where: str) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise SampleError(f"{where}: tool call {call.name!r} has malformed JSON arguments ({exc})") from exc
    if not isinstance(arguments, dict):
        raise SampleError(f"{where}: tool call {call.name!r} has arguments that are not a JSON object")
    return arguments


def _tool_call(call: ToolCall, loss: Optional[bool], critic: bool, where: str) -> SwiftMessage:
    arguments = _arguments(call, where)
    content = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return SwiftMessage("tool_call", defuse_tags(content), loss=loss, critic=critic)


def _convert(message: Message, index: int, root: Path, mask_critic: bool) -> list[SwiftMessage]:
    where = f"message {index} ({message.role})"
    if message.role in ("system", "user"):
        content, images = _with_images(message.content, message.images, root)
        return [SwiftMessage(message.role, content, images)]
    if message.role == "tool":
        content, images = _with_images(message.content, message.images, root)
        return [SwiftMessage("tool_response", content, images)]
    if message.role != "assistant":
        raise SampleError(f"{where}: unknown role")
    if message.images:
        raise SampleError(f"{where}: an assistant message cannot carry images")
    critic = message.kind == "critic"
    loss = False if critic and mask_critic else None
    out = []
    content = _assistant_content(message)
    if content or not message.tool_calls:
        out.append(SwiftMessage("assistant", content, loss=loss, critic=critic))
    out += [_tool_call(call, loss, critic, where) for call in message.tool_calls]
    return out


def to_sample(trajectory: Trajectory, workspace: Path, mask_critic: bool = False) -> Sample:
    """The MS-SWIFT sample of one trajectory; image paths resolve against its workspace."""
    messages: list[SwiftMessage] = []
    for index, message in enumerate(trajectory.messages):
        messages += _convert(message, index, workspace, mask_critic)
    sample = Sample(
        trajectory.task_id, trajectory.agent, trajectory.policy, trajectory.tools_json, tuple(messages), trajectory.origin
    )
    if not any(m.role == "user" for m in sample.messages):
        raise SampleError("no user message")
    cuts = sample.cut_points()
    if not cuts:
        raise SampleError("no assistant turn to train on")
    sample = sample.prefix(cuts[-1])  # the observation after the last call (finalize's) teaches nothing
    for image in sample.images:
        if not image.is_file():
            raise SampleError(f"image {image} is missing")
    return sample
