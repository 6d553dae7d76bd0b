"""What the scripted baseline writes: a manuscript outline from converted sources or search snippets.

Rule-based text handling only (headings, first sentences, snippets): no model,
no paraphrase. The outline honours the task's slide count and uses the images
extracted from the attachments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.manuscript import split_slides

SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
# A markdown heading, or a line made only of bold runs ("**3.2** **Attention**": how PDF converters
# often render section titles).
HEADING = re.compile(r"^(?:#{1,3}\s+(.+?)\s*#*|((?:\*\*[^*\n]+\*\*[ \t]*){1,4}))$", re.MULTILINE)
NOISE = re.compile(r"!\[[^\]]*\]\([^)]*\)|\[([^\]]*)\]\([^)]*\)|</?[a-zA-Z][^>\s]*>?|[*_`>|#]|\$[^$]*\$")
SKIPPED_SECTIONS = re.compile(r"^(references|bibliography|acknowledg|appendix|参考文献|致谢|附录)", re.IGNORECASE)
CJK = re.compile(r"[\u4e00-\u9fff]")
BULLET_CHARS = 110
WORDS = {
    "en": {"overview": "Overview", "takeaways": "Key takeaways", "from": "Figure from", "points": "Key points", "more": "continued"},
    "zh": {"overview": "概览", "takeaways": "要点回顾", "from": "图：来自", "points": "要点", "more": "续"},
}


@dataclass
class SlidePlan:
    title: str
    bullets: list[str] = field(default_factory=list)
    image: str | None = None  # workspace-relative
    image_alt: str = ""

    def markdown(self) -> str:
        lines = [f"# {self.title}", ""] + [f"- {b}" for b in self.bullets]
        if self.image:
            lines += ["", f"![{self.image_alt}]({self.image})"]
        return "\n".join(lines)


def clean(text: str) -> str:
    return " ".join(NOISE.sub(lambda m: m.group(1) or "", text).split())


def shorten(text: str, limit: int = BULLET_CHARS) -> str:
    text = clean(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(",;:，；：") + "…"


def sections(markdown: str) -> list[tuple[str, str]]:
    """(heading, body) pairs of a converted document, in order; bodies without headings are skipped."""
    found = list(HEADING.finditer(markdown))
    out = []
    for i, match in enumerate(found):
        body = markdown[match.end() : found[i + 1].start() if i + 1 < len(found) else len(markdown)]
        heading = clean(match.group(1) or match.group(2))
        table_of_contents = body.count(". . .") > 2 or body.count("...") > 5
        if 2 <= len(heading) <= 80 and len(clean(body)) > 80 and not SKIPPED_SECTIONS.match(heading) and not table_of_contents:
            out.append((heading, body))
    return out


def prose(sentence: str) -> bool:
    """A sentence worth a bullet: enough words, no e-mail or URL, mostly letters."""
    if "@" in sentence or "http" in sentence:
        return False
    cjk = len(CJK.findall(sentence))
    words = len(sentence.split()) if cjk < 4 else cjk // 2
    letters = sum(ch.isalpha() for ch in sentence)
    return words >= 6 and letters >= 0.6 * len(sentence)


def key_sentences(body: str, count: int = 3) -> list[str]:
    paragraphs = [clean(p) for p in body.split("\n\n")]
    sentences = [s for p in paragraphs if len(p) > 40 for s in SENTENCE.split(p)[:2] if prose(s)]
    return [shorten(s) for s in sentences[:count]]


def document_title(markdown: str) -> str | None:
    """The first heading of a converted document, when it reads like a title."""
    first = HEADING.search(markdown)
    title = clean(first.group(1) or first.group(2)) if first else ""
    return title if 4 <= len(title) <= 120 else None


def outline(
    title: str,
    subtitle: str,
    language: str,
    slide_count: int,
    documents: list[str],
    snippets: list[str],
    images: list[str],
) -> list[SlidePlan]:
    """Exactly `slide_count` slides: a title slide, content slides, and a takeaways slide."""
    words = WORDS["zh" if language == "zh" else "en"]
    body: list[SlidePlan] = []
    for document in documents:
        body += [SlidePlan(shorten(h, 60), key_sentences(b)) for h, b in sections(document)]
    if len(body) < slide_count and snippets:
        per = [snippets[i : i + 3] for i in range(0, len(snippets), 3)]
        body += [SlidePlan(f"{words['points']} {i + 1}", [shorten(s) for s in group]) for i, group in enumerate(per)]
    body = [s for s in body if s.bullets]
    if slide_count == 1:
        bullets = [b for s in body[:4] for b in s.bullets[:1]] or [shorten(subtitle)]
        return [SlidePlan(title, bullets, *(_image(images, 0, words, title)))]
    content_slots = max(0, slide_count - 2)
    while body and len(body) < content_slots:  # too few sections: continue the longest ones
        body += [SlidePlan(f"{s.title} ({words['more']})", s.bullets[1:] or s.bullets) for s in body[: content_slots - len(body)]]
    content = body[:content_slots] if body else [SlidePlan(words["points"], [shorten(subtitle)]) for _ in range(content_slots)]
    for i, slide in enumerate(content):
        if i % 2 == 0 and i // 2 < len(images):
            slide.image, slide.image_alt = _image(images, i // 2, words, title)
    takeaways = [s.title for s in content[:4]] or [shorten(subtitle)]
    return [SlidePlan(title, [shorten(subtitle, 160)])] + content + [SlidePlan(words["takeaways"], takeaways)]


def _image(images: list[str], index: int, words: dict[str, str], title: str) -> tuple[str | None, str]:
    if index >= len(images):
        return None, ""
    return images[index], f"{words['from']} {title}"


def manuscript_text(slides: list[SlidePlan]) -> str:
    return "\n\n---\n\n".join(s.markdown() for s in slides) + "\n"


def parse_manuscript(text: str) -> list[SlidePlan]:
    """The Presenter's reading of a manuscript: title, bullets and the first image of each slide."""
    plans = []
    for chunk in split_slides(text):
        title = next((clean(m.group(1) or m.group(2)) for m in HEADING.finditer(chunk)), "")
        bullets = [clean(line[2:]) for line in chunk.splitlines() if line.startswith(("- ", "* "))]
        image = re.search(r"!\[([^\]]*)\]\(([^)\s]+)\)", chunk)
        plans.append(SlidePlan(title, bullets, image.group(2) if image else None, image.group(1) if image else ""))
    return plans
