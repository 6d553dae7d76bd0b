"""What a real provider refuses, with its HTTP status, error shape and wording: FakeOpenAIServer(strict=...).

Profiles:
- "openai": hosted OpenAI Chat Completions. The message and request schema are read from the `openai` SDK's
  request TypedDicts (the SDK is generated from OpenAI's OpenAPI spec), not from a hand-kept list.
- "vllm-glm": GLM-4.6V-Flash behind `vllm serve ... --tool-call-parser glm45 --reasoning-parser glm45`.

Where each message comes from is written next to it. "written" marks wording that could not be found in the
provider's source or in a quoted response and was composed to match the provider's style.
"""

from __future__ import annotations

import collections.abc
import json
import typing
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Literal, Union, get_args, get_origin

import typing_extensions

PROFILES = ("openai", "vllm-glm")

# OpenAI, param "messages.[3].role", code null (quoted with its JSON in crewAIInc/crewAI#1620, smarter-sh/smarter#264;
# the typo is as served in 2024-25 reports, some later reports read "preceding"):
TOOL_WITHOUT_CALL = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
# OpenAI, param "messages.[2].role", code null (quoted with its JSON from a camel-ai/oasis run on
# brainiky.site/blog/fix-openai-400-error-on; the ids follow, comma-separated):
CALL_WITHOUT_TOOL = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
    "The following tool_call_ids did not have response messages: "
)
# vLLM's QueueOverflowError (vllm/exceptions.py after PR #49445, `--max-num-queued-reqs`), served with HTTP 503:
QUEUE_FULL = "The engine is currently busy and cannot accept new requests. Please try again later or on a different instance."
# Written, not found in vLLM's source: vllm-project/vllm#43203 reports that vLLM refuses an image in a `tool`
# message and says "tool message content only supports text content"; the exact text is not quoted there.
TOOL_IMAGE_VLLM = "Tool message content only supports text content, but this message with role 'tool' contains an image_url part."
# vLLM's InputProcessor check on the rendered prompt, multimodal suggestion (vllm/v1/engine/input_processor.py):
DECODER_TOO_LONG = (
    "The decoder prompt (length {length}) is longer than the maximum model length of {max_model_len}. "
    "Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens. "
    "For image inputs, the number of image tokens depends on the number of images, and possibly their aspect ratios as well."
)


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer: its status, the message alone, and the whole JSON body."""

    status: int
    message: str
    body: dict[str, Any]


def check_profile(name: str | None) -> None:
    if name is not None and name not in PROFILES:
        raise ValueError(f"unknown strict profile {name!r}; known: {PROFILES}")


def queue_full() -> Refusal:
    """vLLM's answer when `--max-num-queued-reqs` requests are in flight. The error type is the status phrase, as
    vLLM's create_error_response does for a GracefulHTTPError (seen in aphrodite-engine's copy of it; the vLLM
    revision in the index predates the class)."""
    return _vllm(QUEUE_FULL, status=503, err_type="Service Unavailable")


def refusal(
    profile: str, body: dict[str, Any], *, max_model_len: int | None, prompt_tokens: Callable[[Any], int], image_tokens: int
) -> Refusal | None:
    """The provider's refusal of this request body, or None when it would accept it.

    `prompt_tokens(messages)` estimates the rendered prompt with `image_tokens` per image part."""
    if profile == "openai":
        return _openai_request(body)
    if profile == "vllm-glm":
        return _vllm_glm_request(body, max_model_len, prompt_tokens, image_tokens)
    raise ValueError(f"unknown strict profile {profile!r}; known: {PROFILES}")


# -- error shapes -------------------------------------------------------------------------------------------


def _openai(message: str, param: str | None = None, code: str | None = None, status: int = 400) -> Refusal:
    return Refusal(
        status, message, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
    )


def _vllm(message: str, status: int = 400, err_type: str = "BadRequestError", param: str | None = None) -> Refusal:
    """vLLM's ErrorResponse(error=ErrorInfo(message, type, param, code=status)) (vllm/entrypoints/openai/engine/protocol.py)."""
    return Refusal(status, message, {"error": {"message": message, "type": err_type, "param": param, "code": status}})


# -- the SDK's TypedDicts, read as a schema -----------------------------------------------------------------


@dataclass(frozen=True)
class _Schema:
    fields: dict[str, Any]  # key -> type hint, Required[...] taken off
    required: frozenset[str]


@lru_cache(maxsize=None)
def _schema(td: type) -> _Schema:
    hints = typing.get_type_hints(td, include_extras=True)
    # The SDK's modules use `from __future__ import annotations`, so on Python 3.11 the TypedDicts' __required_keys__
    # come out empty: Required[...] is read from the resolved hints instead.
    required = frozenset(key for key, hint in hints.items() if get_origin(hint) is typing.Required)
    return _Schema({key: _bare(hint) for key, hint in hints.items()}, required)


def _bare(hint: Any) -> Any:
    while get_origin(hint) in (typing.Required, typing.NotRequired, typing.Annotated):
        hint = get_args(hint)[0]
    return hint


def _members(hint: Any) -> list[Any]:
    """The alternatives of a Union/Optional hint, flattened."""
    hint = _bare(hint)
    if get_origin(hint) is Union:
        return [member for arg in get_args(hint) for member in _members(arg)]
    return [hint]


def _literal(hint: Any) -> tuple[Any, ...]:
    hint = _bare(hint)
    return get_args(hint) if get_origin(hint) is Literal else ()


def _item_types(hint: Any) -> list[type]:
    """The TypedDicts an Iterable[...] alternative of `hint` may hold."""
    for member in _members(hint):
        if get_origin(member) in (collections.abc.Iterable, list, collections.abc.Sequence):
            return [t for t in _members(get_args(member)[0]) if typing_extensions.is_typeddict(t)]
    return []


def _pick(options: list[type], value: dict[str, Any]) -> type | None:
    """The TypedDict among `options` that `value` is: by its 'type' literal when they have one."""
    if len(options) == 1:
        return options[0]
    for td in options:
        if value.get("type") in _literal(_schema(td).fields.get("type")):
            return td
    return None


def _part_types(td: type) -> dict[str, type]:
    """For a message TypedDict: the content part types its `content` allows, by their 'type' literal."""
    return {_literal(_schema(t).fields["type"])[0]: t for t in _item_types(_schema(td).fields.get("content"))}


@lru_cache(maxsize=None)
def _message_types() -> dict[str, type]:
    """role -> the SDK's TypedDict for a message of that role, in ChatCompletionMessageParam's order."""
    from openai.types.chat import ChatCompletionMessageParam  # imported on first use: the fake starts without it

    return {_literal(_schema(td).fields["role"])[0]: td for td in get_args(ChatCompletionMessageParam)}


@lru_cache(maxsize=None)
def _request_fields() -> tuple[frozenset[str], frozenset[str]]:
    from openai.types.chat.completion_create_params import CompletionCreateParamsBase, CompletionCreateParamsStreaming

    base = _schema(CompletionCreateParamsBase)
    return frozenset(base.fields) | frozenset(_schema(CompletionCreateParamsStreaming).fields), base.required


# -- openai -------------------------------------------------------------------------------------------------


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def _bracketed(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(path))


def _quoted_list(values: list[str]) -> str:
    """OpenAI's enumeration: 'a', 'a' and 'b', 'a', 'b', and 'c'."""
    quoted = [f"'{v}'" for v in values]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _openai_request(body: dict[str, Any]) -> Refusal | None:
    fields, required = _request_fields()
    unknown = sorted(key for key in body if key not in fields)
    if unknown:
        # OpenAI's wording, param and code null ("Unrecognized request argument supplied: top_k",
        # xlinx/sd-webui-decadetw-auto-prompt-llm#29; "Unrecognized request arguments supplied: function_call,
        # functions", langchain-ai/langchain#8593; the names come sorted, tbxark/ChatGPT-Telegram-Workers#5).
        s = "s" if len(unknown) > 1 else ""
        return _openai(f"Unrecognized request argument{s} supplied: {', '.join(unknown)}")
    for key in sorted(required):
        if key not in body:
            if key == "model":  # OpenAI's wording, param and code null (danielmiessler/Fabric#239)
                return _openai("you must provide a model parameter")
            return _openai(f"Missing required parameter: '{key}'.", param=key, code="missing_required_parameter")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    for i, message in enumerate(messages):
        if isinstance(message, dict) and (refused := _openai_message(i, message)):
            return refused
    return _openai_tool_sequence(messages)


def _openai_message(i: int, message: dict[str, Any]) -> Refusal | None:
    types = _message_types()
    role = message.get("role")
    if role not in types:
        # OpenAI's schema-validator wording (e.g. "'' is not one of ['system', 'assistant', 'user', 'function'] -
        # 'messages.21.role'", lss233/kirara-ai#1028); the roles are the SDK's.
        return _openai(f"{role!r} is not one of {list(types)} - 'messages.{i}.role'")
    td = types[role]
    path = ("messages", i)
    if refused := _openai_keys(message, td, path):
        return refused
    content = message.get("content")
    if isinstance(content, list):
        if role != "user" and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            # OpenAI's wording and param (quoted in full on community.openai.com/t/745769 and openai/openai-node#1030).
            return _openai(
                f"Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', "
                f"but this message with role '{role}' contains an image URL.",
                param=f"messages[{i}]",
                code="invalid_value",
            )
        allowed = _part_types(td)
        if not allowed:  # the SDK allows only a string here (a function message)
            # Written after OpenAI's "Invalid type for 'messages[0].content[0]': expected an object, but got a
            # string instead." (code invalid_type).
            where = f"messages[{i}].content"
            return _openai(
                f"Invalid type for '{where}': expected a string, but got an array instead.", param=where, code="invalid_type"
            )
        for j, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") not in allowed:
                # Written after OpenAI's "Invalid value: 'input_image'. Supported values are: 'output_text' and
                # 'refusal'." (Responses API, community.openai.com/t/1365014); the allowed types are the SDK's.
                return _openai(
                    f"Invalid value: '{part.get('type')}'. Supported values are: {_quoted_list(list(allowed))}.",
                    param=f"messages[{i}].content[{j}].type",
                    code="invalid_value",
                )
    return _openai_nested(message, td, path)


def _openai_keys(value: dict[str, Any], td: type, path: tuple[Any, ...]) -> Refusal | None:
    schema = _schema(td)
    extra = [key for key in value if key not in schema.fields]
    if extra:
        # OpenAI's schema-validator wording, e.g. "Additional properties are not allowed ('tool_responses' was
        # unexpected) - 'messages.3'" (microsoft/autogen#1174), param and code null.
        names = ", ".join(f"'{key}'" for key in extra)
        verb = "was" if len(extra) == 1 else "were"
        return _openai(f"Additional properties are not allowed ({names} {verb} unexpected) - '{_dotted(path)}'")
    missing = sorted(schema.required - value.keys())
    if missing:
        # OpenAI's wording and code, e.g. "Missing required parameter: 'messages[1].function_call.name'."
        # (langchain-ai/langgraphjs#405; "...: 'messages'." with param "messages", SilasMarvin/lsp-ai#108)
        where = _bracketed((*path, missing[0]))
        return _openai(f"Missing required parameter: '{where}'.", param=where, code="missing_required_parameter")
    return None


def _openai_nested(value: dict[str, Any], td: type, path: tuple[Any, ...]) -> Refusal | None:
    """The keys of the dicts inside `value` (content parts, tool calls, their function...), against the SDK's types."""
    for key, hint in _schema(td).fields.items():
        sub = value.get(key)
        if isinstance(sub, dict):
            options = [t for t in _members(hint) if typing_extensions.is_typeddict(t)]
            inner = _pick(options, sub) if options else None
            if inner is not None and (
                refused := _openai_keys(sub, inner, (*path, key)) or _openai_nested(sub, inner, (*path, key))
            ):
                return refused
        elif isinstance(sub, list):
            options = _item_types(hint)
            for j, item in enumerate(sub):
                inner = _pick(options, item) if isinstance(item, dict) and options else None
                where = (*path, key, j)
                if inner is not None and (refused := _openai_keys(item, inner, where) or _openai_nested(item, inner, where)):
                    return refused
    return None


def _openai_tool_sequence(messages: list[Any]) -> Refusal | None:
    """Read in order, as the API does: an assistant message's tool calls open a run of tool messages, each of
    which must answer one of those calls; the next other message (or the end) closes the run, and then every call
    must have had its answer. Params as OpenAI sends them ("messages.[3].role")."""
    calls: list[str] | None = None  # the ids of the open run's assistant message
    answered: set[Any] = set()
    opened_at = 0
    for i, message in enumerate([*messages, None]):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if calls is None or message.get("tool_call_id") not in calls:
                return _openai(TOOL_WITHOUT_CALL, param=f"messages.[{i}].role")
            answered.add(message.get("tool_call_id"))
            continue
        if calls is not None:
            missing = [c for c in calls if c not in answered]
            if missing:
                where = i if message is not None else opened_at
                return _openai(CALL_WITHOUT_TOOL + ", ".join(missing), param=f"messages.[{where}].role")
            calls = None
        if role == "assistant" and message.get("tool_calls"):
            calls = [str(c.get("id")) for c in message["tool_calls"] if isinstance(c, dict)]
            answered, opened_at = set(), i
    return None


# -- vllm-glm -----------------------------------------------------------------------------------------------


def _images(node: Any) -> int:
    if isinstance(node, list):
        return sum(_images(item) for item in node)
    if isinstance(node, dict):
        return 1 if node.get("type") == "image_url" else sum(_images(v) for v in node.values())
    return 0


def _vllm_glm_request(
    body: dict[str, Any], max_model_len: int | None, prompt_tokens: Callable[[Any], int], image_tokens: int
) -> Refusal | None:
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "tool" and _images(message.get("content")):
            return _vllm(TOOL_IMAGE_VLLM)
    if refused := _vllm_tool_arguments(messages):
        return refused
    if max_model_len is not None:
        return _vllm_context(body, messages, max_model_len, prompt_tokens, image_tokens)
    return None


def _vllm_tool_arguments(messages: list[Any]) -> Refusal | None:
    """vLLM's chat_utils._postprocess_messages json.loads every non-empty `arguments` string of earlier assistant
    tool calls before rendering the chat template. Up to vLLM 0.25 a string that does not parse fails the request:
    HTTP 400, BadRequestError, the JSONDecodeError's own text (vllm-project/vllm#43995 quotes
    {"message":"Expecting ',' delimiter: line 1 column 54 (char 53)","type":"BadRequestError","param":null,"code":400}).
    PR #48922 (merged 2026-07) coerces such strings to {} instead: this profile is the stricter, older server."""
    decoded = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if isinstance(arguments, str) and arguments:
                try:
                    decoded.append(json.loads(arguments))
                except json.JSONDecodeError as e:
                    return _vllm(str(e))
    for value in decoded:
        if value is not None and not isinstance(value, dict):
            # Valid JSON that is not an object reaches GLM's template, whose `arguments.items()` then fails in
            # jinja2's sandbox with this UndefinedError text (jinja2 3.1, checked here); vLLM answers a
            # TemplateError with 400 BadRequestError. ("null" is coerced to {} since vLLM PR #43862.)
            return _vllm(f"'{type(value).__name__} object' has no attribute 'items'")
    return None


def _vllm_context(
    body: dict[str, Any], messages: list[Any], max_model_len: int, prompt_tokens: Callable[[Any], int], image_tokens: int
) -> Refusal | None:
    """vLLM's two length checks, in the order a request meets them.

    1. The renderer tokenizes the chat-template text, images still one placeholder each, truncated at
       max_model_len - max_tokens + 1 tokens, and refuses more than max_model_len - max_tokens of them
       (vllm/renderers/params.py TokenizeParams._token_len_check; "at least" because of that truncation).
    2. After the image processor has expanded the placeholders, the engine refuses a prompt longer than
       max_model_len (vllm/v1/engine/input_processor.py), with the multimodal suggestion for a VLM.
    So an image prompt that fits but leaves less than max_tokens of room is accepted (generation stops at the
    model length), as on the real server."""
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    if max_tokens > max_model_len:
        # vLLM's TokenizeParams.__post_init__ check (vllm/renderers/params.py), as a vLLM-mimicking mock quotes
        # the v0.18+ text; the chat request's parameter names in it were not checked in vLLM's source.
        return _vllm(
            f"max_tokens={max_tokens} cannot be greater than max_model_len=max_total_tokens={max_model_len}. "
            f"Please request fewer output tokens. (parameter=max_tokens, value={max_tokens})",
            param="max_tokens",
        )
    full = prompt_tokens(messages)
    text = full - image_tokens * _images(messages)
    max_input = max_model_len - max_tokens
    if text > max_input:
        count = max_input + 1
        return _vllm(
            f"This model's maximum context length is {max_model_len} tokens. However, you requested {max_tokens} output "
            f"tokens and your prompt contains at least {count} input tokens, for a total of at least {count + max_tokens} "
            "tokens. Please reduce the length of the input prompt or the number of requested output tokens. "
            f"(parameter=input_tokens, value={count})",
            param="input_tokens",
        )
    if full > max_model_len:
        return _vllm(DECODER_TOO_LONG.format(length=full, max_model_len=max_model_len))
    return None
