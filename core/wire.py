"""Records -> OpenAI chat messages: images as cached data URLs (or notes for a text-only model), and
the prompt-size estimate for servers that report no usage."""

from __future__ import annotations

import base64
import mimetypes
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from core.records import Message

IMAGE_TOKEN_ESTIMATE = 1000  # prompt tokens charged per image when the server reports none


class DataURLs:
    """Images as base64 data URLs, kept by path, inode, size and modification time.

    A conversation resends every image it holds with each call: a Presenter's slide renders
    are read and encoded again on every turn (~0.2 ms each here, on the worker's event loop)
    unless kept. Least recently used URLs go first beyond `max_bytes`."""

    def __init__(self, max_bytes: int = 64 * 2**20):
        self.max_bytes = max_bytes
        self._urls: OrderedDict[tuple[str, int, int, int], str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # to_wire may run on several event loops' threads

    def __call__(self, path: Path) -> str:
        """The data URL of `path` as it is now; OSError when it cannot be read."""
        stat = path.stat()
        key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            url = self._urls.get(key)
            if url is not None:
                self._urls.move_to_end(key)
                return url
        mime = mimetypes.guess_type(path.name)[0] or "image/png"
        url = f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"
        with self._lock:
            if key not in self._urls:
                self._urls[key] = url
                self._bytes += len(url)
            while self._bytes > self.max_bytes and self._urls:
                self._bytes -= len(self._urls.popitem(last=False)[1])
        return url


_data_urls = DataURLs()


def _content(message: Message, image_root: Path | None, vision: bool = True) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.content
    if not vision:  # a text-only model: name the images instead of sending them
        note = f"[{len(message.images)} image(s) not shown: this model reads no images]"
        return f"{message.content}\n{note}" if message.content else note
    root = image_root or Path.cwd()
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    for image in message.images:  # an image deleted since (e.g. by the agent) becomes a note, not a crash
        try:
            parts.append({"type": "image_url", "image_url": {"url": _data_urls(root / image)}})
        except OSError:
            parts.append({"type": "text", "text": f"[image {image} no longer exists]"})
    return parts


def to_wire(
    messages: Sequence[Message], image_root: Path | None, images_in_tool_messages: bool, vision: bool = True
) -> list[dict[str, Any]]:
    """Records -> OpenAI chat messages.

    With `images_in_tool_messages=False` (vLLM), images of consecutive tool
    results are moved into one `user` message placed right after them. With
    `vision=False` no image is sent: each message says how many it left out.
    """
    if not vision:
        images_in_tool_messages = True  # nothing to move: every message keeps its own note
    wire: list[dict[str, Any]] = []
    pending: list[Message] = []  # tool messages whose images wait for the user message

    def flush() -> None:
        if pending:
            images = tuple(img for m in pending for img in m.images)
            note = "Images returned by the tool call(s) above:"
            wire.append({"role": "user", "content": _content(Message("user", note, images), image_root, vision)})
            pending.clear()

    for m in messages:
        if m.role != "tool":
            flush()
        item: dict[str, Any] = {"role": m.role}
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id
            if m.images and not images_in_tool_messages:
                item["content"] = m.content or "(image below)"
                pending.append(m)
            else:
                item["content"] = _content(m, image_root, vision)
        else:
            item["content"] = _content(m, image_root, vision)
        if m.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls
            ]
        wire.append(item)
    flush()
    return wire


def estimate_prompt_tokens(messages: Sequence[Message]) -> int:
    chars = sum(len(m.content) + len(m.reasoning or "") + sum(len(c.arguments) for c in m.tool_calls) for m in messages)
    return chars // 4 + IMAGE_TOKEN_ESTIMATE * sum(len(m.images) for m in messages)
