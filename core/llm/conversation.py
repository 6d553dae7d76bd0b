"""A rollout's records as its model saw them: the one conversation both the request and the sample render.

The records (`core.records.Message`) say what happened. What the model was shown depends on
the server's rules, which an endpoint *profile* states: where a tool's images go, and which
past reasoning the chat template renders. `conversation()` applies a profile to the records;
`core.llm.wire` turns the result into the request, `train.samples` into the MS-SWIFT sample, so
the two agree by construction (`python -m train.parity` checks it token by token). Each
profile's choices and their sources are in docs/profiles.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import Enum
from typing import Sequence

from core.records import Message, ToolCall

IMAGE_NOTE = "Images returned by the tool call(s) above:"  # the user message that carries tool images
IMAGE_BELOW = "(image below)"  # a tool result that was only an image, its image moved to that message


class ToolImages(str, Enum):
    tool = "tool"  # image parts inside the tool message
    user = "user"  # a user message right after the tool results holds them (servers that refuse the former)


class PastReasoning(str, Enum):
    none = "none"  # never sent back: every past turn reads as having no reasoning
    after_last_user = "after_last_user"  # `reasoning_content` of the turns after the last user message (GLM-4.5 family)
    every = "every"  # every past turn's: no server's rule, the view of a sample exported with history_reasoning=keep


@dataclass(frozen=True)
class Profile:
    name: str
    tool_images: ToolImages
    past_reasoning: PastReasoning
    serves: str  # which servers and models it is for
    images: tuple[str, ...] = (
        "webp",
        "png",
        "jpeg",
        "gif",
    )  # image formats the server decodes; the first is what renders are written as

    @property
    def render_format(self) -> str:
        return self.images[0]


# Each choice and its source: docs/profiles.md. In short: OpenAI and vLLM refuse images in tool messages, so every
# built-in profile sends them in a user message after the tool results; GLM-4.5-family chat templates render an
# assistant turn's `reasoning_content` only after the last user message (vLLM and SGLang hand it to the template);
# OpenAI's request types have no reasoning field, and llama.cpp's ChatML tool formats render none. Renders are
# written as lossless WebP (the pixels of Chromium's PNG, ~5x fewer bytes) where the server decodes it.
PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("openai", ToolImages.user, PastReasoning.none, "hosted OpenAI Chat Completions and APIs that follow its types"),
        Profile(
            "vllm-glm",
            ToolImages.user,
            PastReasoning.after_last_user,
            "GLM-4.5V/4.6V served by vLLM with --reasoning-parser glm45 --tool-call-parser glm45",
        ),
        Profile("sglang", ToolImages.user, PastReasoning.after_last_user, "GLM-4.5V/4.6V served by SGLang (glm45 parsers)"),
        Profile(
            "llama.cpp",
            ToolImages.user,
            PastReasoning.none,
            "llama.cpp and llama-cpp-python servers (llm=local)",
            ("png", "jpeg", "gif", "bmp"),  # stb_image, which its multimodal projector decodes with, reads no WebP
        ),
    )
}
DEFAULT_PROFILE = "vllm-glm"  # how the fine-tuned GLM-4.6V-Flash is served


class UnknownProfile(ValueError):
    pass


def profile_named(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None


@dataclass(frozen=True)
class Turn:
    """One message as the model reads it."""

    role: str  # system | user | assistant | tool
    text: str = ""
    images: tuple[str, ...] = ()  # workspace-relative, in order; none when the model reads no images
    reasoning: str | None = None  # the assistant's own reasoning (rendered only where `reasoning_shown` says)
    tool_calls: tuple[ToolCall, ...] = ()  # arguments always a JSON object (see `json_arguments`)
    tool_call_id: str | None = None
    kind: str = "model"  # the record's kind; "images" for the user message that carries tool images
    malformed: bool = False  # an assistant turn with a call whose arguments were not a JSON object
    source: int | None = None  # its record's index in the trajectory; None for the message that carries tool images


def json_arguments(call: ToolCall) -> tuple[ToolCall, bool]:
    """The call with arguments a server can parse, and whether the model's text had to be replaced.

    vLLM parses every earlier call's arguments with `json.loads`: one that does not parse makes
    every later request of the rollout fail. The record keeps the model's text; the history
    sends `{}` (the tool refused the call and said why)."""
    try:
        parsed = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        return call, False
    return replace(call, arguments="{}"), True


def _unseen_note(count: int) -> str:
    return f"[{count} image(s) not shown: this model reads no images]"


def _turn(message: Message, index: int, vision: bool) -> Turn:
    text, images = message.content, message.images
    if images and not vision:  # a text-only model: the images are named, not sent
        text, images = (f"{text}\n{_unseen_note(len(images))}" if text else _unseen_note(len(images))), ()
    calls = [json_arguments(c) for c in message.tool_calls]
    return Turn(
        message.role,
        text,
        images,
        message.reasoning if message.role == "assistant" else None,
        tuple(c for c, _ in calls),
        message.tool_call_id,
        message.kind,
        any(bad for _, bad in calls),
        index,
    )


def conversation(messages: Sequence[Message], profile: Profile, vision: bool = True) -> list[Turn]:
    """The records as the model saw them (every turn's reasoning kept; `reasoning_shown` says which it read)."""
    turns: list[Turn] = []
    held: list[str] = []  # images of consecutive tool results, for the user message after them

    def release() -> None:
        if held:
            turns.append(Turn("user", IMAGE_NOTE, tuple(held), kind="images"))
            held.clear()

    for index, message in enumerate(messages):
        if message.role != "tool":
            release()
        turn = _turn(message, index, vision)
        if turn.role == "tool" and turn.images and profile.tool_images is ToolImages.user:
            held.extend(turn.images)
            turn = replace(turn, text=turn.text or IMAGE_BELOW, images=())
        turns.append(turn)
    release()
    return turns


def reasoning_shown(turns: Sequence[Turn], profile: Profile) -> frozenset[int]:
    """Indices of the assistant turns whose reasoning the model reads in a request made of `turns`."""
    if profile.past_reasoning is PastReasoning.none:
        return frozenset()
    last_user = (
        -1
        if profile.past_reasoning is PastReasoning.every
        else max((i for i, t in enumerate(turns) if t.role == "user"), default=-1)
    )
    return frozenset(i for i, t in enumerate(turns) if i > last_user and t.role == "assistant" and t.reasoning)
