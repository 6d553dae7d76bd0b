"""A fake model that plays every role of a synthesis run, for the fake OpenAI server: the task writer and its
quality gate (`task_writer`), the Researcher and the Presenter, the critic, the consistency and
quality judges. Deterministic: the same request gets the same answer, so two runs ask the same things.

The Presenter writes two slides, inspects the first; the critic finds one major flaw in every slide it is
shown, so the Presenter rewrites slide 1 after the injection, and the consistency judge is asked about it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fakes.openai_server import Reply


def succeeded(messages: list[dict], name: str, **args: str) -> bool:
    """Whether a call to `name` (with these arguments) got a non-error result in this conversation."""
    ids = {
        c["id"]
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == name and arguments(c).items() >= args.items()
    }
    return any(
        m["role"] == "tool" and m.get("tool_call_id") in ids and not str(m["content"]).startswith("Error") for m in messages
    )


def arguments(call: dict) -> dict:
    try:
        return json.loads(call["function"]["arguments"])
    except json.JSONDecodeError:
        return {}


def last_tool_text(body: dict[str, Any]) -> str:
    """The last tool result of a request."""
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")


def task_writer(body: dict) -> Reply:
    """The task writer and its quality gate: a persona or a document gets a request; "bicycle" first gets malformed
    JSON (asked again), "chef" a Chinese request labelled English, both "twin"s the same request, "vandal" one the
    quality gate refuses."""
    prompt = body["messages"][0]["content"]
    retry = len(body["messages"]) > 1
    if "knowledge note" in prompt:
        return Reply(json.dumps({"topic": "tides", "note": "Tides are caused by the gravity of the moon and the sun. " * 3}))
    if "review requests" in prompt:
        keep = "BADTASK" not in prompt
        return Reply(f'Sure! {{"keep": {str(keep).lower()}, "reason": "{"fine" if keep else "incoherent"}"}}')
    if "turns a document" in prompt:
        title = re.search(r"Document title: (.*)", prompt).group(1)
        language = re.search(r'"language": "(\w+)"', prompt).group(1)
        text = (
            f"请根据附件《{title}》为研究生做一个报告，重点讲方法和实验。"
            if language == "zh"
            else f"Present the attached paper {title} to my lab, focusing on the method and experiments."
        )
        checks = [{"class": "completeness", "question": f"Does the deck present the method of {title}?"}]
        return Reply(json.dumps({"language": language, "instruction": text, "checks": checks}, ensure_ascii=False))
    persona = re.search(r"The person making the request:\n(.*)", prompt).group(1)
    if "bicycle" in persona and not retry:
        return Reply('```json\n{"language": "en", "instruction": "unterminated\n```')  # malformed: re-asked
    if "chef" in persona:
        return Reply(
            json.dumps({"language": "en", "instruction": "我想做一个关于川菜历史的演讲，面向美食爱好者。"}, ensure_ascii=False)
        )
    if "twin" in persona:
        return Reply(
            json.dumps(
                {
                    "language": "en",
                    "instruction": "Please make a talk about caring for houseplants in small city flats for beginners.",
                }
            )
        )
    if "vandal" in persona:
        return Reply(
            json.dumps({"language": "en", "instruction": "BADTASK do the thing with the stuff, you know, the usual one."})
        )
    return Reply(
        json.dumps(
            {"language": "en", "instruction": f"I work as {persona[:80]}; build me a talk on my job for high-school students."}
        )
    )


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
        if c["function"]["name"] == "write_file" and arguments(c).get("path") == path
    }
    return sum(
        m["role"] == "tool" and m.get("tool_call_id") in ids and not str(m["content"]).startswith("Error") for m in messages
    )


def _presenter(messages: list[dict[str, Any]]) -> Reply:
    for n in (1, 2):
        if not succeeded(messages, "write_file", path=f"slides/slide_0{n}.html"):
            return Reply("", [("write_file", {"path": f"slides/slide_0{n}.html", "content": SLIDE.format(title=f"Slide {n}")})])
    if not succeeded(messages, "inspect_slide", html_file="slides/slide_01.html"):
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
        if not succeeded(messages, "write_file", path="manuscript.md"):
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
    return task_writer(body)
