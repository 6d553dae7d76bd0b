"""What a token counter (`core.protocols.TokenCounter`) says of one MS-SWIFT sample."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TokenCount:
    total: int
    trained: int  # tokens that carry loss
    image_tokens: int
