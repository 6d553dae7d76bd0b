"""A request's chat messages from the records (through core.llm.conversation's profile), images as cached data
URLs, and the prompt-size estimate for servers that report no usage."""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import orjson

from core.images import as_png
from core.llm.conversation import Profile, Turn, conversation, reasoning_shown
from core.records import Message

IMAGE_TOKEN_ESTIMATE = 1000  # prompt tokens charged per image when the server reports none


class DataURLs:
    """Images as base64 data URLs, kept by path, inode, size and modification time.

    A conversation resends every image it holds with each call: a Presenter's slide renders
    are read and encoded again on every turn (~0.2 ms each here, on the worker's event loop)
    unless kept. Least recently used URLs go first beyond `max_bytes`. An image in a format the server does not
    decode (`accepted`) is sent as PNG, the same pixels."""

    def __init__(self, max_bytes: int = 64 * 2**20):
        self.max_bytes = max_bytes
        self._urls: OrderedDict[tuple[str, int, int, int, str], str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # to_wire may run on several event loops' threads

    def __call__(self, path: Path, accepted: tuple[str, ...] = ()) -> str:
        """The data URL of `path` as it is now; OSError when it cannot be read."""
        stat = path.stat()
        kind = image_format(path)
        send = kind if not accepted or kind in accepted else "png"
        key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, send)
        with self._lock:
            url = self._urls.get(key)
            if url is not None:
                self._urls.move_to_end(key)
                return url
        data = path.read_bytes() if send == kind else as_png(path)
        mime = mimetypes.guess_type(f"x.{send}")[0] or "image/png"
        url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
        with self._lock:
            if key not in self._urls:
                self._urls[key] = url
                self._bytes += len(url)
            while self._bytes > self.max_bytes and self._urls:
                self._bytes -= len(self._urls.popitem(last=False)[1])
        return url


def image_format(path: Path) -> str:
    """An image file's format by its name: png, webp, jpeg, gif, ..."""
    suffix = path.suffix.lower().lstrip(".")
    return "jpeg" if suffix == "jpg" else suffix


_data_urls = DataURLs()


def _content(turn: Turn, image_root: Path, accepted: tuple[str, ...]) -> str | list[dict[str, Any]]:
    if not turn.images:
        return turn.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    for image in turn.images:  # an image deleted since (e.g. by the agent) becomes a note, not a crash
        try:
            parts.append({"type": "image_url", "image_url": {"url": _data_urls(image_root / image, accepted)}})
        except OSError:
            parts.append({"type": "text", "text": f"[image {image} no longer exists]"})
    return parts


def to_wire(messages: Sequence[Message], image_root: Path | None, profile: Profile, vision: bool = True) -> list[dict[str, Any]]:
    """Records -> the OpenAI chat messages of a request, as `profile`'s server takes them (core.llm.conversation)."""
    turns = conversation(messages, profile, vision)
    shown = reasoning_shown(turns, profile)
    root = image_root or Path.cwd()
    wire: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        item: dict[str, Any] = {"role": turn.role, "content": _content(turn, root, profile.images)}
        if turn.tool_call_id is not None:
            item["tool_call_id"] = turn.tool_call_id
        if turn.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in turn.tool_calls
            ]
        if index in shown:
            item["reasoning_content"] = turn.reasoning
        wire.append(item)
    return wire


def digest(wire: list[dict[str, Any]]) -> str:
    """A short fingerprint of a request's messages, kept with the reply (`Message.sent`) so that the request can be
    rebuilt from the records later and shown to be the one sent (train.parity)."""
    return hashlib.sha256(orjson.dumps(wire)).hexdigest()[:20]


def estimate_prompt_tokens(messages: Sequence[Message]) -> int:
    chars = sum(len(m.content) + len(m.reasoning or "") + sum(len(c.arguments) for c in m.tool_calls) for m in messages)
    return chars // 4 + IMAGE_TOKEN_ESTIMATE * sum(len(m.images) for m in messages)
