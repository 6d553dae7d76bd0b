"""The context budget: how much of the window a conversation fills, and the warnings as it fills up.

The size is what the server counted for the last turn (prompt + reply) plus an
estimate (characters / 4, a fixed cost per image) of the messages added since;
before the first reply it is all estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from core.llm.wire import estimate_prompt_tokens
from core.records import Message, Usage

CONTEXT_WARNING = (
    "\n\n[context warning] {used:,} of the {window:,} context tokens are used ({percent}%); about {remaining:,} remain. "
    "Wrap up: finish the essential work and call finalize before the context runs out."
)


@dataclass
class ContextBudget:
    window: int
    warn_fractions: Sequence[float]
    counted: int = 0  # tokens the server counted in the last turn
    covered: int = 0  # how many messages that count covers
    warned: int = 0  # how many of warn_fractions were announced

    def update(self, usage: Usage, messages: int) -> None:
        self.counted, self.covered = usage.total, messages

    def used(self, messages: Sequence[Message]) -> int:
        return self.counted + estimate_prompt_tokens(messages[self.covered :])

    def warning(self) -> str:
        """The warning text when the last count crossed a new fraction of the window, else ''."""
        crossed = sum(self.counted >= fraction * self.window for fraction in self.warn_fractions)
        if crossed <= self.warned:
            return ""
        self.warned = crossed
        used, window = self.counted, self.window
        return CONTEXT_WARNING.format(
            used=used, window=window, percent=round(100 * used / window), remaining=max(0, window - used)
        )
