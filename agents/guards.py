"""Guards against a degenerate model: they notice within a few turns that an agent is going nowhere.

Each guard counts one symptom over consecutive turns. One turn before its limit it tries a
cheap recovery (a short instruction appended as a warning); at its limit it ends the agent
with its own failure category (`agent/no_tool_calls`, `agent/loop`, `agent/rambling`,
`agent/stalled`). A limit of 0 turns a guard off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from agents.config import GuardConfig
from core.steps import Observation
from core.failures import Failure
from core.records import ToolCall

NUDGE = "You did not call a tool. Call a tool to continue; call finalize when the work is done."
NO_TOOL_RECOVERY = (
    "You have not called a tool for {turns} turns; the next turn without one ends your work. "
    "Reply with one tool call and little text. Your tools: {tools}."
)
LOOP_RECOVERY = (
    "You repeated the same call(s) {turns} times and got the same result; repeating them will not change it, "
    "and the next repetition ends your work. Take the next step of your task instead, or call finalize."
)
CUT_NOTE = "Your reply was cut ({why}). Keep replies short: little text and one tool call per turn."
STALL_RECOVERY = (
    "No file was written or changed in your last {turns} turns; one more turn without progress ends your work. "
    "Write the file your task needs next, or call finalize."
)
# What tools and the runtime write into a workspace on their own (renders, caches, logs, saved outputs and
# indexes in dot-folders, the trajectories): not the agent's progress. Top-level names with these prefixes.
NOT_PROGRESS = ("renders", "previews", "tool_cache", "logs", "trajectory_", ".")


class GuardTripped(Exception):
    """An agent ended by a guard; `failure` is its category."""

    def __init__(self, failure: str, detail: str):
        super().__init__(f"{failure}: {detail}")
        self.failure = failure


def call_signature(calls: Sequence[ToolCall]) -> tuple[tuple[str, str], ...]:
    return tuple((c.name, c.arguments) for c in calls)


def workspace_state(root: Path) -> frozenset[tuple[str, int, int]]:
    """(path, size, mtime) of every file the agent may have written; a change between turns is progress."""
    found = set()
    for folder, dirs, files in os.walk(root):
        relative = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if relative != "." or not d.startswith(NOT_PROGRESS)]
        for name in files:
            if relative == "." and name.startswith(NOT_PROGRESS):
                continue
            try:
                stat = os.stat(os.path.join(folder, name))
            except FileNotFoundError:  # removed while we looked
                continue
            found.add((os.path.join(relative, name), stat.st_size, stat.st_mtime_ns))
    return frozenset(found)


@dataclass
class Guards:
    """The guards of one agent; `observe` is called once per turn, after its tool calls ran."""

    config: GuardConfig
    workspace: Path
    tool_names: Sequence[str]
    no_tool_turns: int = 0
    cut_turns: int = 0
    turns: list[tuple] = field(default_factory=list)  # per turn: (call signature, observation texts)
    state: frozenset = frozenset()
    written: bool = False  # has the agent changed a file yet
    idle_turns: int = 0  # turns since the start or the last change

    def __post_init__(self) -> None:
        self.state = workspace_state(self.workspace)

    def cut(self, why: str) -> str:
        """A turn cut at the token or time limit: the note to append; raises GuardTripped at the limit."""
        self.cut_turns += 1
        if self._at(self.config.cut_turns, self.cut_turns):
            raise GuardTripped(Failure.rambling, f"{self.cut_turns} turns in a row cut ({why})")
        return CUT_NOTE.format(why=why)

    def observe(self, calls: Sequence[ToolCall], observations: Sequence[Observation], cut: str | None) -> str:
        """The warning to append after a turn ('' for none; `cut`: why its reply was cut, if it was);
        raises GuardTripped at a guard's limit."""
        if not cut:
            self.cut_turns = 0
        notes = [self.cut(cut) if cut else "", self._tool_calls(calls), self._loop(calls, observations), self._progress(calls)]
        return "\n\n".join(n for n in notes if n)

    def _at(self, limit: int, count: int) -> bool:
        return limit > 0 and count >= limit

    def _one_short(self, limit: int, count: int) -> bool:
        return limit > 1 and count == limit - 1

    def _tool_calls(self, calls: Sequence[ToolCall]) -> str:
        self.no_tool_turns = 0 if calls else self.no_tool_turns + 1
        limit, count = self.config.no_tool_call_turns, self.no_tool_turns
        if not count:
            return ""
        if self._at(limit, count):
            raise GuardTripped(Failure.no_tool_calls, f"{count} turns in a row without a tool call")
        if self._one_short(limit, count):
            return NO_TOOL_RECOVERY.format(turns=count, tools=", ".join(self.tool_names))
        return NUDGE

    def _loop(self, calls: Sequence[ToolCall], observations: Sequence[Observation]) -> str:
        if not calls:
            return ""
        self.turns.append((call_signature(calls), tuple(o.text for o in observations)))
        limit = self.config.repeated_call_turns
        repeats = self._repeats()
        if self._at(limit, repeats):
            raise GuardTripped(Failure.loop, f"the same call(s) {repeats} times ({calls[0].name} ...)")
        return LOOP_RECOVERY.format(turns=repeats) if self._one_short(limit, repeats) else ""

    def _repeats(self) -> int:
        """How many times the latest turn repeats: the same calls in a row, or a cycle of 2-3 identical turns."""
        same = 1
        while same < len(self.turns) and self.turns[-same - 1][0] == self.turns[-1][0]:
            same += 1
        best = same
        for period in (2, 3):
            matched = 0
            while matched + period < len(self.turns) and self.turns[-1 - matched] == self.turns[-1 - matched - period]:
                matched += 1
            distinct = len({t for t in self.turns[-period:]}) == period
            if distinct:
                best = max(best, (matched + period) // period)
        return best

    def _progress(self, calls: Sequence[ToolCall]) -> str:
        state = workspace_state(self.workspace) if calls else self.state
        changed, self.state = state != self.state, state
        self.written |= changed
        self.idle_turns = 0 if changed else self.idle_turns + 1
        limit = self.config.stall_turns if self.written else self.config.first_write_turns
        if self._at(limit, self.idle_turns):
            after = "since its last file change" if self.written else "without writing any file"
            raise GuardTripped(Failure.stalled, f"{self.idle_turns} turns {after}")
        return STALL_RECOVERY.format(turns=self.idle_turns) if self._one_short(limit, self.idle_turns) else ""
