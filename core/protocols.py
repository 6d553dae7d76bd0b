"""The small protocols at the project's seams. Everything else depends on these."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from core.records import Message
from core.llm_types import ChatResult


@runtime_checkable
class Model(Protocol):
    """Anything that answers a chat turn: an OpenAI-compatible endpoint or the scripted policy."""

    name: str
    context_window: int | None  # tokens the model can hold, where known (the agent's budget warns against it)

    async def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict] | None = None,
        image_root: Path | None = None,
    ) -> ChatResult: ...
