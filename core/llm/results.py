"""What a model turn returns, and how a model call fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from core.records import ToolCall, Usage


@dataclass(frozen=True)
class ChatResult:
    content: str
    reasoning: Optional[str]
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: Optional[str] = None
    latency_s: float = 0.0
    usage_reported: bool = True  # False when the server gave no usage and it was estimated
    request_digest: Optional[str] = None  # of the messages sent (core.llm.wire.digest); None when nothing was sent


class ModelError(RuntimeError):
    """A model call that failed for good; `kind` says why.

    Kinds: rate_limit, server, timeout, connection, malformed_response (the
    transient ones, raised after retries ran out) and bad_request, auth,
    context_length (not retried); turn_timeout when the reply, retries included,
    took longer than the endpoint's `turn_timeout_s`.
    """

    def __init__(self, kind: str, message: str, attempts: int = 1):
        super().__init__(f"{kind}: {message} (after {attempts} attempt(s))")
        self.kind = kind
        self.attempts = attempts
