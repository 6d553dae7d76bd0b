"""A fake model that plays every role of a synthesis run, for the fake OpenAI server: the task writer and its
quality gate (tests.pipeline.test_tasks), the Researcher and the Presenter, the critic, the consistency and
quality judges. Deterministic: the same request gets the same answer, so two runs ask the same things.

The Presenter writes two slides, inspects the first; the critic finds one major flaw in every slide it is
shown, so the Presenter rewrites slide 1 after the injection, and the consistency judge is asked about it.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.openai_server import Reply
from tests.pipeline.test_faults import _arguments, _succeeded
from tests.pipeline.test_tasks import _fake_writer

SLIDE = (
    '<html><body style="margin:0;width:1280px;height:720px"><h1 style="margin:60px;font-size:48px">{title}</h1>'
    '<p style="margin:60px;font-size:28px">Tides rise and fall twice a day because the moon pulls the oceans.</p></body></html>'
)
FINDING = {
    "category": "style",
    "severity": "major",
    "evidence": "h1: the title is too large for the slide",
    "fix": "shrink the title to 40px",
}


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content if p.get("type") == "text")


def _writes(messages: list[dict[str, Any]], path: str) -> int:
    """Successful write_file calls to `path` in the conversation."""
    ids = {
        c["id"]
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "write_file" and _arguments(c).get("path") == path
    }
    return sum(
        m["role"] == "tool" and m.get("tool_call_id") in ids and not str(m["content"]).startswith("Error") for m in messages
    )


def _presenter(messages: list[dict[str, Any]]) -> Reply:
    for n in (1, 2):
        if not _succeeded(messages, "write_file", path=f"slides/slide_0{n}.html"):
            return Reply("", [("write_file", {"path": f"slides/slide_0{n}.html", "content": SLIDE.format(title=f"Slide {n}")})])
    if not _succeeded(messages, "inspect_slide", html_file="slides/slide_01.html"):
        return Reply("", [("inspect_slide", {"html_file": "slides/slide_01.html"})])
    injected = any(m.get("name") == "thinking" for m in messages if m["role"] == "tool")
    if injected and _writes(messages, "slides/slide_01.html") < 2:
        fixed = SLIDE.format(title="Slide 1").replace("font-size:48px", "font-size:40px")
        return Reply("", [("write_file", {"path": "slides/slide_01.html", "content": fixed})])
    return Reply("", [("finalize", {"outcome": "slides"})])


def every_role(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    first = _text(messages[0])
    if first.startswith("You are the Researcher"):
        if not _succeeded(messages, "write_file", path="manuscript.md"):
            text = "# Tides\n\n- the moon pulls the oceans\n\n---\n\n# Twice a day\n\n- two high tides a day\n"
            return Reply("", [("write_file", {"path": "manuscript.md", "content": text})])
        return Reply("", [("finalize", {"outcome": "manuscript.md"})])
    if first.startswith("You are the Presenter"):
        return _presenter(messages)
    if first.startswith("You review one rendered presentation slide"):
        return Reply(json.dumps({"reasoning": "The title is too big; I should shrink it.", "findings": [FINDING]}))
    if first.startswith("You review the markdown manuscript"):
        return Reply(json.dumps({"reasoning": "", "findings": []}))
    if first.startswith("You audit how an AI agent"):
        return Reply(
            json.dumps(
                {
                    "reasoning": "rewritten",
                    "findings": [{"finding": 1, "status": "addressed", "reason": "font-size 40px"}],
                    "passed": True,
                }
            )
        )
    if first.startswith("You check rendered presentation slides"):
        return Reply(json.dumps({"reasoning": "clean", "defects": [], "passed": True}))
    return _fake_writer(body)
