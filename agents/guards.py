"""Guards against a degenerate model: they notice within a few turns that an agent is going nowhere.

Each guard counts one symptom over consecutive turns. One turn before its limit it tries a
cheap recovery (a short instruction appended as a warning, saying what was observed); at its
limit it ends the agent with its own failure category (`agent/no_tool_calls`, `agent/loop`,
`agent/rambling`, `agent/stalled`). A limit of 0 turns a guard off.

What counts (docs: README, "guards"):
- progress: a turn that puts new content in a file the agent owns, or whose tools return something
  the agent has not seen before in this rollout (a search hit not listed before, a new page, the
  inspection of a slide whose text or picture changed). Errors, the todo list and thoughts are not progress;
- a repeat: the same call(s) with the same result(s), so a retry after an error is a repeat only
  when the error repeats.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection, Sequence

from agents.config import GuardConfig
from agents.tools.control import SLIDE_NAME, SLIDES, TODO_FILE
from core.failures import Failure
from core.records import ToolCall
from core.run.reader import TRAJECTORY_FILE
from core.seams.steps import Observation

NUDGE = "You did not call a tool. Call a tool to continue; call finalize when the work is done."
NO_TOOL_RECOVERY = (
    "You have not called a tool for {turns} turns; the next turn without one ends your work. "
    "Reply with one tool call and little text. Your tools: {tools}."
)
LOOP_RECOVERY = (
    "You made the same call(s) {turns} times and got the same result each time; repeating them will not change it, "
    "and the next repetition ends your work. Take the next step of your task instead, or call finalize."
)
CUT_NOTE = "Your reply was cut ({why}). Keep replies short: little text and one tool call per turn."
STALL_RECOVERY = (
    "Your last {turns} turns changed no file and returned nothing you had not seen before (the same results, errors, "
    "or only notes and the todo list); one more such turn ends your work. "
    "Write what your task needs next, look up something new, or call finalize."
)
# What tools and the runtime write into a workspace on their own (renders, caches, logs, saved outputs and
# indexes in dot-folders, the trajectories), and the todo list: not the agent's progress. Top-level names.
NOT_PROGRESS = ("renders", "previews", "tool_cache", "logs", TRAJECTORY_FILE.split("{agent}")[0], ".", TODO_FILE)


class GuardTripped(Exception):
    """An agent ended by a guard; `failure` is its category."""

    def __init__(self, failure: str, detail: str):
        super().__init__(f"{failure}: {detail}")
        self.failure = failure


def workspace_files(root: Path) -> dict[str, tuple[int, int]]:
    """path -> (size, mtime) of every file the agent may have written."""
    found = {}
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
            found[os.path.join(relative, name)] = (stat.st_size, stat.st_mtime_ns)
    return found


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # removed or unreadable while we looked
        return ""


def result_key(workspace: Path, observation: Observation) -> str:
    """What a result said: its text and the bytes of its pictures (a re-render of a changed slide differs)."""
    digest = hashlib.sha256(observation.text.encode())
    for image in observation.images:
        try:
            digest.update((workspace / image).read_bytes())
        except OSError:
            digest.update(image.encode())
    return digest.hexdigest()


@dataclass
class Guards:
    """The guards of one agent; `observe` is called once per turn, after its tool calls ran.
    `informing`: the tools whose new results are progress (not thinking, the todo list, finalize)."""

    config: GuardConfig
    workspace: Path
    tool_names: Sequence[str]
    informing: Collection[str]
    no_tool_turns: int = 0
    cut_turns: int = 0
    turns: list[tuple] = field(default_factory=list)  # per turn: ((tool, arguments, result key), ...)
    seen: set[tuple[str, str]] = field(default_factory=set)  # (tool, result key) of every result so far
    files: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # path -> (size, mtime, content digest)
    idle_turns: int = 0  # turns since the start or the last progress
    progressed: bool = False  # whether the last observed turn made progress

    def __post_init__(self) -> None:
        self._changed()

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
        turn = tuple((c.name, c.arguments, result_key(self.workspace, o)) for c, o in zip(calls, observations))
        self.progressed = (bool(calls) and self._changed()) | self._learned(turn, observations)  # both keep their state
        self.idle_turns = 0 if self.progressed else self.idle_turns + 1
        notes = [self.cut(cut) if cut else "", self._tool_calls(calls), self._loop(turn), self._stall()]
        return "\n\n".join(n for n in notes if n)

    @property
    def stall_limit(self) -> int:
        """`stall_turns`, plus one per slide written: a review pass re-inspects every slide, changed or not."""
        if not self.config.stall_turns:
            return 0
        slides = self.workspace / SLIDES
        written = sum(1 for p in slides.iterdir() if SLIDE_NAME.fullmatch(p.name)) if slides.is_dir() else 0
        return self.config.stall_turns + written

    def _at(self, limit: int, count: int) -> bool:
        return limit > 0 and count >= limit

    def _one_short(self, limit: int, count: int) -> bool:
        return limit > 1 and count == limit - 1

    def _learned(self, turn: tuple, observations: Sequence[Observation]) -> bool:
        """Whether a tool returned something, not an error, that this agent had not seen before: an item (a
        search hit) not listed before, or a result without items not seen whole before."""
        found = {
            (name, part)
            for (name, _, key), obs in zip(turn, observations)
            if name in self.informing and not obs.is_error
            for part in (obs.items or (key,))
        }
        new = found - self.seen
        self.seen |= new
        return bool(new)

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

    def _loop(self, turn: tuple) -> str:
        if not turn:
            return ""
        self.turns.append(turn)
        limit = self.config.repeated_call_turns
        repeats = self._repeats()
        if self._at(limit, repeats):
            raise GuardTripped(Failure.loop, f"the same call(s) with the same result(s) {repeats} times ({turn[0][0]} ...)")
        return LOOP_RECOVERY.format(turns=repeats) if self._one_short(limit, repeats) else ""

    def _repeats(self) -> int:
        """How many times the latest turn repeats: the same turn in a row, or a cycle of 2-3 identical turns."""
        best = 1
        for period in (1, 2, 3):
            matched = 0
            while matched + period < len(self.turns) and self.turns[-1 - matched] == self.turns[-1 - matched - period]:
                matched += 1
            if len(set(self.turns[-period:])) == period:
                best = max(best, (matched + period) // period)
        return best

    def _changed(self) -> bool:
        """Whether a file the agent owns appeared, went, or has new content since the last turn (a file rewritten
        with the same bytes is not a change); contents are read again only where size or mtime moved."""
        now = {}
        for path, (size, mtime) in workspace_files(self.workspace).items():
            known = self.files.get(path)
            same = known is not None and known[:2] == (size, mtime)
            now[path] = (size, mtime, known[2] if same and known else _digest(self.workspace / path))
        changed = {p: v[2] for p, v in now.items()} != {p: v[2] for p, v in self.files.items()}
        self.files = now
        return changed

    def _stall(self) -> str:
        limit = self.stall_limit
        if self._at(limit, self.idle_turns):
            raise GuardTripped(Failure.stalled, f"{self.idle_turns} turns without a changed file or a new result")
        return STALL_RECOVERY.format(turns=self.idle_turns) if self._one_short(limit, self.idle_turns) else ""
