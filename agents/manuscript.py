"""Structured diagnostics of a markdown manuscript (slides separated by `---` lines).

What the Researcher hands to the Presenter must be usable offline: every image a file
inside the workspace, with alt text, each used once; no empty slides; slide count and
language as the task asks. Issues carry a code, the slide number (None for the deck)
and a short detail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from core.cli import InputError
from core.defects import ManuscriptIssue
from core.language import detect_language
from core.markdown_slides import fence_after, split_slides
from core.seams.steps import ManuscriptReport

_MD_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\(\s*(?P<src><[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"([a-zA-Z-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"\bhttps?://\S+")
SIZE_NOTE = re.compile(r" \(\d+x\d+, aspect [\d.]+:1\)$")  # the size the hand-off adds to an image's alt text
_LANGUAGE_NAMES = {"english": "en", "chinese": "zh", "中文": "zh", "英文": "en"}


@dataclass(frozen=True)
class ManuscriptConstraints:
    slides_min: int | None = None
    slides_max: int | None = None
    language: str | None = None  # ISO 639-1 code ("en", "zh"); "zh-CN" and "Chinese" are accepted

    @classmethod
    def of(cls, value: ManuscriptConstraints | Mapping[str, Any] | None) -> ManuscriptConstraints:
        if value is None:
            return cls()
        if isinstance(value, ManuscriptConstraints):
            return value
        unknown = set(value) - {"slides_min", "slides_max", "language"}
        if unknown:
            raise ValueError(f"unknown manuscript constraints: {', '.join(sorted(unknown))}")
        return cls(**value)


@dataclass(frozen=True)
class _Image:
    src: str
    alt: str | None  # None: no alt attribute at all


class ManuscriptUnreadable(InputError, ValueError):
    """A manuscript that cannot be read (missing, not UTF-8 text)."""


def inspect_manuscript(
    md_path: Path,
    workspace: Path,
    constraints: ManuscriptConstraints | Mapping[str, Any] | None = None,
) -> ManuscriptReport:
    """The slides, language and issues of one manuscript; ValueError when it cannot be read."""
    md_path = Path(md_path)
    try:
        text = md_path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ManuscriptUnreadable(f"{md_path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise ManuscriptUnreadable(f"{md_path}: not UTF-8 text") from exc
    wanted = ManuscriptConstraints.of(constraints)
    slides = split_slides(text)
    issues: list[ManuscriptIssue] = []
    first_use: dict[str, int] = {}
    root = Path(workspace).resolve()
    for number, slide in enumerate(slides, start=1):
        prose = _without_code(slide)
        if not _COMMENT.sub("", prose).strip():
            issues.append(_issue("empty_slide", number, "slide has no content"))
        for image in _images(prose):
            issues.extend(_image_issues(image, number, md_path.parent, root, first_use))
    language = detect_language(plain_text(text)).lang
    issues.extend(_constraint_issues(wanted, len(slides), language))
    return ManuscriptReport(len(slides), language, tuple(issues))


def plain_text(markdown: str) -> str:
    """The readable words: no code, images, link targets, tags or URLs (for language detection)."""
    text = _without_code(markdown)
    text = _MD_IMAGE.sub(" ", text)
    text = _LINK.sub(r"\1", text)
    text = _COMMENT.sub(" ", text)
    text = _TAG.sub(" ", text)
    return _URL.sub(" ", text)


def _without_code(markdown: str) -> str:
    kept = []
    fence: str | None = None
    for line in markdown.splitlines():
        inside = fence is not None
        fence = fence_after(line, fence)
        if not inside and fence is None:
            kept.append(line)
    return _INLINE_CODE.sub(" ", "\n".join(kept))


def _images(markdown: str) -> list[_Image]:
    """Markdown and HTML images, in reading order."""
    found = [(m.start(), _Image(src=m.group("src").strip("<>"), alt=m.group("alt"))) for m in _MD_IMAGE.finditer(markdown)]
    for tag in _HTML_IMAGE.finditer(markdown):
        attrs = {m.group(1).lower(): next(g for g in m.groups()[1:] if g is not None) for m in _ATTR.finditer(tag.group(0))}
        found.append((tag.start(), _Image(src=attrs.get("src", ""), alt=attrs.get("alt"))))
    return [image for _, image in sorted(found, key=lambda pair: pair[0])]


def _image_issues(image: _Image, slide: int, base: Path, root: Path, first_use: dict[str, int]) -> list[ManuscriptIssue]:
    issues = []
    src = image.src
    scheme = urlparse(src).scheme.lower()
    if not image.alt or not image.alt.strip():
        issues.append(_issue("missing_alt", slide, f"image {src or '(no src)'} has no alt text"))
    if scheme in ("http", "https"):
        issues.append(
            _issue(
                "external_url",
                slide,
                f"image {src} is a remote URL; download it into the workspace",
            )
        )
        key = src
    elif scheme == "data":
        key = src[:200]
    else:
        path = _local_path(src, base)
        if path is None:
            issues.append(_issue("missing_asset", slide, "image has no src"))
            return issues
        if not path.is_relative_to(root):
            issues.append(_issue("missing_asset", slide, f"image {src} is outside the workspace"))
        elif not path.is_file():
            issues.append(_issue("missing_asset", slide, f"image {src} not found in the workspace"))
        key = str(path)
    if key in first_use:
        issues.append(
            _issue(
                "duplicate_image",
                slide,
                f"image {src[:120]} is also used on slide {first_use[key]}",
            )
        )
    else:
        first_use[key] = slide
    return issues


def _local_path(src: str, base: Path) -> Path | None:
    parsed = urlparse(src)
    raw = unquote(parsed.path)
    if not raw:
        return None
    return (base / raw).resolve()


def _constraint_issues(wanted: ManuscriptConstraints, count: int, language: str) -> list[ManuscriptIssue]:
    issues = []
    low, high = wanted.slides_min, wanted.slides_max
    if (low is not None and count < low) or (high is not None and count > high):
        expected = f"{low}" if low == high else f"{low if low is not None else 0}-{high if high is not None else 'any'}"
        issues.append(_issue("slide_count", None, f"{count} slides; the task asks for {expected}"))
    if wanted.language:
        code = _LANGUAGE_NAMES.get(
            wanted.language.strip().lower(),
            wanted.language.strip().lower().split("-")[0].split("_")[0],
        )
        if language != code:
            issues.append(
                _issue(
                    "language",
                    None,
                    f"manuscript is in {language}; the task asks for {code}",
                )
            )
    return issues


def _issue(code: str, slide: int | None, detail: str) -> ManuscriptIssue:
    return ManuscriptIssue(code, slide, detail)
