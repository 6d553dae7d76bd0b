"""How a deck's slides stand to one another, for the content gate (filters/content.py).

- A slide with a heading alone is fine as the title slide, as a section divider that introduces content (its
  heading names a section, "Part 2: Results", "第二部分", "02 Method", or stands alone in the middle of the slide,
  where a divider's heading is set: "Results"), and as a closing slide at the end ("Thank you", "谢谢").
- An agenda shown again before each part of the talk is one slide said once, not a duplicate: the same slide
  under an agenda heading ("Agenda", "Outline", "目录"), never twice in a row nor at the end, and no more often
  than it lists parts.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Sequence

from filters.content_reading import SlideText

_SECTION = re.compile(
    r"(?:part|section|chapter|module|unit)\s+(?:\d+|[ivx]+|one|two|three|four|five|six|seven|eight|nine|ten)\b"
    r"|0?\d{1,2}\s*[.:、—–-]?\s+\S|第\s*[一二三四五六七八九十\d]+\s*(?:部分|章|节|篇|讲|单元)|[一二三四五六七八九十]+\s*[、.．]",
    re.IGNORECASE,
)
_CLOSING = re.compile(r"(?:thank(?:s| you)|(?:any )?questions|q\s*&\s*a|the end|谢谢|感谢|问答|提问|答疑)\b", re.IGNORECASE)
_AGENDA = re.compile(r"\b(?:agenda|outline|(?:table of )?contents|roadmap)\b|目录|议程|提纲|大纲", re.IGNORECASE)
_WORD = re.compile(r"\w+")


def has_content(slide: SlideText) -> bool:
    return bool(slide.items or slide.figures or slide.images)


def bare_but_accepted(slides: Sequence[SlideText], k: int) -> bool:
    """Slide `k` may hold a heading alone: the title slide, a section divider followed by content, or a closing
    slide at the end."""
    slide = slides[k]
    if k + 1 == len(slides):  # the last slide (a one-slide deck's only slide is its content)
        return k > 0 and bool(_CLOSING.match(slide.heading.strip()))
    divider = bool(_SECTION.match(slide.heading.strip())) or slide.centred
    return k == 0 or (divider and has_content(slides[k + 1]))


def agenda_repeats(slides: Sequence[SlideText]) -> set[int]:
    """The numbers of the slides that show the deck's agenda again before a later part (every copy but the first)."""
    copies: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for k, slide in enumerate(slides):
        if _AGENDA.search(slide.heading) and slide.items:
            copies[tuple(_plain(t) for t in (slide.heading, *slide.items, *slide.figures))].append(k)
    found: set[int] = set()
    for ks in copies.values():
        apart = all(b - a > 1 for a, b in zip(ks, ks[1:])) and ks[-1] + 1 < len(slides)
        if len(ks) > 1 and apart and len(ks) <= len(slides[ks[0]].items):
            found |= {slides[k].number for k in ks[1:]}
    return found


def _plain(text: str) -> str:
    """The words of `text`, lower case: the marks and styling of the part shown as current do not count."""
    return " ".join(_WORD.findall(text.lower()))
