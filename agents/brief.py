"""What an agent is told of its task: the facts its prompts state, and what the scripted policy plans from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Brief:
    task_id: str
    instruction: str
    language: str
    aspect: str
    width: int
    height: int
    slides: int | None
    attachments: tuple[str, ...]  # workspace-relative
    workspace: Path
    manuscript: str = "manuscript.md"
    can_inspect: bool = True  # False when the inspect tools are not offered (reflection=none)
    calls_per_turn: int = 8  # tool calls the loop runs per turn (agent.max_tool_calls_per_turn)
