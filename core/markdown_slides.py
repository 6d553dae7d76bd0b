"""The manuscript's format: markdown slides separated by lines that are exactly `---`, outside fenced code.

Read by the Researcher's checks (`agents.manuscript`), the scripted policy and the deck export (a slide's
speaker notes are its manuscript section).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def split_slides(text: str) -> list[str]:
    """Slides separated by lines that are exactly `---`, outside fenced code blocks.
    An empty first or last part (a leading or trailing separator) is not a slide."""
    slides: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        fence = fence_after(line, fence)
        if fence is None and line.rstrip() == "---":
            slides.append("\n".join(current))
            current = []
        else:
            current.append(line)
    slides.append("\n".join(current))
    if slides and not slides[0].strip():
        slides.pop(0)
    if slides and not slides[-1].strip():
        slides.pop()
    return slides


def slide_sections(text: str, titles: list[str]) -> list[str]:
    """The manuscript section each slide came from, where known ("" where not): the section whose
    heading is the slide's title, else the section at the slide's place when there are as many
    sections as slides (and no other slide's title named it)."""
    sections = [section.strip() for section in split_slides(text)]
    by_heading: dict[str, str] = {}
    for section in sections:
        if m := _HEADING.search(section):
            by_heading.setdefault(_normal(m.group(1)), section)
    found = [by_heading.get(_normal(title), "") for title in titles]
    if len(sections) == len(titles):
        found = [f or ("" if sections[i] in found else sections[i]) for i, f in enumerate(found)]
    return found


def _normal(title: str) -> str:
    return " ".join(title.split()).casefold()


def fence_after(line: str, fence: str | None) -> str | None:
    """The code fence open after `line` (None: outside code)."""
    match = _FENCE.match(line)
    if match is None:
        return fence
    if fence is None:
        return match.group(1)
    closing = line.strip()
    return None if set(closing) == {fence[0]} and len(closing) >= len(fence) else fence
