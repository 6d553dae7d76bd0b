"""What an agent did after each critic injection: its tool calls and the net diff of the files they changed.

The trajectory holds every tool call's arguments, so the text files of the workspace
are replayed from them: `write_file` content (mode write or append), `edit_file`
old -> new (every occurrence, as the tool does), `move_file` renames. Calls whose
result was an error changed nothing and are skipped. A revision window starts right
after the injection, from the files as the writes left them when the critic looked,
and ends at the next inspection of the same artifact (or the trajectory's end). A file
whose earlier text is not in the trajectory (written by a command, or appended to
first) has an unknown base: its change is shown as the edits themselves.
`execute_command` calls are listed as actions but not replayed.
"""

from __future__ import annotations

import difflib
import json
import posixpath
from dataclasses import dataclass
from typing import Any, Iterator

import pydantic

from agents.tools.inspect import INSPECT_TOOLS
from core.records import ArtifactError, CriticInjection, Message, ToolCall, Trajectory
from core.seams.review import Finding
from core.seams.revision import Revision

_FINDINGS = pydantic.TypeAdapter(list[Finding])
_SAID_CHARS = 300
_ARGS_CHARS = 200


@dataclass(frozen=True)
class _Event:
    index: int  # message index of the assistant turn that made the call
    call: ToolCall
    args: dict[str, Any]
    ok: bool
    result: str


def parse_findings(injection: CriticInjection) -> tuple[Finding, ...]:
    try:
        return tuple(_FINDINGS.validate_json(injection.findings_json))
    except pydantic.ValidationError as exc:
        raise ArtifactError(f"the critic findings of the injection at step {injection.step} are unreadable: {exc}") from exc


def revisions(trajectory: Trajectory) -> list[Revision]:
    """One Revision per critic injection of the trajectory, in order."""
    events = list(_events(trajectory.messages))
    said = {
        i: m.content
        for i, m in enumerate(trajectory.messages)
        if m.role == "assistant" and m.kind != "critic" and m.content.strip()
    }
    found = []
    for injection in trajectory.injections:
        tool, artifact = _reviewed(injection.observation_ref)
        before = _replay({}, {}, (e for e in events if e.index < injection.message_index))
        window, end, reinspected = _window(events, injection.message_index, artifact, len(trajectory.messages))
        pieces: dict[str, list[str]] = {}
        after = _replay(dict(before), pieces, window)
        indices = sorted({e.index for e in window} | {i for i in said if injection.message_index < i <= end})
        actions = tuple(line for i in indices for line in _actions(i, said.get(i), [e for e in window if e.index == i]))
        diffs = _diffs(before, after, pieces, artifact)
        found.append(
            Revision(trajectory.agent, injection, parse_findings(injection), tool, artifact, actions, diffs, reinspected)
        )
    return found


def _reviewed(observation_ref: str) -> tuple[str, str]:
    """(tool, artifact) of an observation_ref "tool:artifact[:image]"."""
    tool, _, rest = observation_ref.partition(":")
    artifact = rest.partition(":")[0]
    if not tool or not artifact:
        raise ArtifactError(f"critic injection names no artifact: observation_ref={observation_ref!r}")
    return tool, _norm(artifact)


def _norm(path: str) -> str:
    return posixpath.normpath(path)


def _events(messages: tuple[Message, ...]) -> Iterator[_Event]:
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.tool_call_id}
    for index, message in enumerate(messages):
        if message.role != "assistant" or message.kind == "critic":
            continue
        for call in message.tool_calls:
            result = results.get(call.id, "")
            yield _Event(index, call, _arguments(call), not result.startswith("Error:"), result)


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.arguments)
    except json.JSONDecodeError:
        return {}
    return args if isinstance(args, dict) else {}


def _window(events: list[_Event], start: int, artifact: str, last: int) -> tuple[list[_Event], int, bool]:
    """The calls after message `start` up to the next inspection of `artifact`: (calls, last message index, reinspected)."""
    window: list[_Event] = []
    for event in events:
        if event.index <= start:
            continue
        if event.call.name in INSPECT_TOOLS and artifact in {_norm(v) for v in event.args.values() if isinstance(v, str)}:
            return window, event.index, True
        window.append(event)
    return window, last, False


def _replay(files: dict[str, str], pieces: dict[str, list[str]], events: Iterator[_Event] | list[_Event]) -> dict[str, str]:
    """Apply the successful file calls to `files` (path -> known text); edits of unknown text go to `pieces`."""
    for event in events:
        if not event.ok:
            continue
        name, args = event.call.name, event.args
        if name == "write_file" and isinstance(args.get("path"), str) and isinstance(args.get("content"), str):
            path, content = _norm(args["path"]), args["content"]
            if args.get("mode", "write") != "append":
                files[path] = content
                pieces.pop(path, None)
            elif path in files:
                files[path] += content
            else:
                pieces.setdefault(path, []).append(_unified(path, "", content))
        elif name == "edit_file" and all(isinstance(args.get(k), str) for k in ("path", "old_string", "new_string")):
            path = _norm(args["path"])
            if path in files:
                files[path] = files[path].replace(args["old_string"], args["new_string"])
            else:
                pieces.setdefault(path, []).append(_unified(path, args["old_string"], args["new_string"]))
        elif name == "move_file" and isinstance(args.get("source"), str) and isinstance(args.get("destination"), str):
            source, destination = _norm(args["source"]), _norm(args["destination"])
            if source in files:
                files[destination] = files.pop(source)
    return files


def _diffs(
    before: dict[str, str], after: dict[str, str], pieces: dict[str, list[str]], artifact: str
) -> tuple[tuple[str, str], ...]:
    paths = sorted({p for p in after if after[p] != before.get(p)} | set(pieces), key=lambda p: (p != artifact, p))
    diffs = []
    for path in paths:
        if path in after and after[path] != before.get(path):
            diffs.append((path, _unified(path, before.get(path, ""), after[path])))
        else:
            edits = "\n".join(pieces[path])
            diffs.append((path, f"(the earlier text of {path} is not in the trajectory; its edits:)\n{edits}"))
    return tuple(diffs)


def _unified(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", n=2, lineterm="")
    return "\n".join(lines)


def _actions(index: int, said: str | None, events: list[_Event]) -> Iterator[str]:
    if said:
        yield f"said: {_short(said, _SAID_CHARS)}"
    for event in events:
        status = "" if event.ok else f" -> {_short(event.result, _ARGS_CHARS)}"
        yield f"{event.call.name} {_describe(event)}{status}"


def _describe(event: _Event) -> str:
    args = event.args
    if event.call.name == "write_file":
        mode = " (append)" if args.get("mode") == "append" else ""
        return f"{args.get('path')}{mode}: {len(str(args.get('content', '')))} characters"
    if event.call.name == "edit_file":
        return f"{args.get('path')}: replace {_short(str(args.get('old_string', '')), 80)!r}"
    if event.call.name == "thinking":
        return _short(str(args.get("thought", "")), _SAID_CHARS)
    return _short(json.dumps(args, ensure_ascii=False), _ARGS_CHARS)


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
