"""Structured JSON replies from a model, with re-asks when the reply is malformed.

Task writers, critics and judges all ask for a JSON object; models wrap it in
prose or code fences, or get it wrong. The first JSON object in the reply is
parsed and validated against a pydantic model; on failure the model is told what
was wrong and asked again, up to `retries` times.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence, TypeVar

import pydantic

from core.protocols import Model
from core.records import Message

T = TypeVar("T", bound=pydantic.BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class JSONReplyError(ValueError):
    """No valid JSON object after all re-asks; `reason` is malformed_json or invalid_fields."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def first_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in `text` (inside a code fence if there is one)."""
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    start = candidate.find("{")
    if start < 0:
        raise json.JSONDecodeError("no '{' found", candidate, 0)
    obj, _ = json.JSONDecoder().raw_decode(candidate[start:])
    if not isinstance(obj, dict):
        raise json.JSONDecodeError("not an object", candidate, start)
    return obj


async def ask_json(
    model: Model,
    messages: Sequence[Message],
    schema: type[T],
    retries: int = 2,
    image_root: Path | None = None,
) -> T:
    """Ask until the reply holds a JSON object matching `schema` (raises JSONReplyError)."""
    history = list(messages)
    reason, detail = "malformed_json", ""
    for _ in range(retries + 1):
        reply = await model.chat(history, image_root=image_root)
        try:
            return schema.model_validate(first_json_object(reply.content))
        except json.JSONDecodeError as exc:
            reason, detail = "malformed_json", f"not valid JSON ({exc.msg})"
        except pydantic.ValidationError as exc:
            reason, detail = "invalid_fields", "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        history += [
            Message("assistant", reply.content),
            Message("user", f"Your reply could not be used: {detail}. Reply with only the JSON object, fields as asked."),
        ]
    raise JSONReplyError(reason, detail)
