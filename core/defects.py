"""Every defect code in one table: what slide inspection and the manuscript checks measure, what
the content gate finds, what the quality judge may name. The critic (category, fix), the quality
judge's prompt and reply schema, the run report and the docs read it from here.

A new code is one row here, and one in docs/inspection.md's table (docs/extending.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Literal

from core.tables import by_name


class Severity(str, Enum):
    """How bad a defect or a critic's finding is; the critic injects findings at or above `critic.min_severity`."""

    critical = "critical"
    major = "major"
    minor = "minor"


SeverityName = Literal["critical", "major", "minor"]  # a Severity's value, as records and findings carry it
# The critic's taxonomy (core.seams.review.Finding): slides' categories, then manuscripts'
FindingCategory = Literal["layout", "render", "style", "integrity", "constraint", "format"]
SEVERITY_RANK = {Severity.critical.value: 3, Severity.major.value: 2, Severity.minor.value: 1}


@dataclass(frozen=True)
class Defect:
    """One defect measured in a rendered slide (render/defects/): its code in the table below, at one element."""

    code: str  # overflow | text_clipped | overlap | low_contrast | broken_image | blank | size_mismatch
    severity: SeverityName
    element: str  # short CSS-like selector
    detail: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.code} ({self.severity}) {self.element}: {self.detail}"


@dataclass(frozen=True)
class ManuscriptIssue:
    """One issue the manuscript checks found (agents/manuscript.py): its code in the table below, at a slide
    (None: the whole manuscript)."""

    code: str
    slide: int | None
    detail: str

    def to_dict(self) -> dict[str, str | int | None]:
        return asdict(self)


class DefectSource(str, Enum):
    """Who reports the code."""

    slide = "slide"  # inspect_slide's measurements (render/defects/)
    manuscript = "manuscript"  # inspect_manuscript (agents/manuscript.py)
    content = "content"  # the content gate on the deck's text (filters/content.py)
    judge = "judge"  # only a vision judge can see it (the quality gate's model)


@dataclass(frozen=True)
class DefectCode:
    code: str
    source: DefectSource
    category: FindingCategory | Literal["content"]  # the critic's taxonomy; a content gate's code: content
    severity: SeverityName  # when the reporter gives none
    description: str  # what it means, as the quality judge and the docs say it
    fix: str  # what the critic tells the agent to do


def defect_code(code: str) -> DefectCode:
    """The table's row for `code`; KeyError naming the table when a component emits an unknown code."""
    try:
        return DEFECT_CODES[code]
    except KeyError:
        raise KeyError(
            f"defect code {code!r} is not in core/defects.py's table (known: {', '.join(sorted(DEFECT_CODES))})"
        ) from None


def codes_of(source: DefectSource) -> tuple[str, ...]:
    return tuple(c.code for c in DEFECT_CODES.values() if c.source is source)


_S, _M, _C, _J = DefectSource.slide, DefectSource.manuscript, DefectSource.content, DefectSource.judge
DEFECT_CODES: dict[str, DefectCode] = by_name(
    (
        DefectCode(
            "overflow",
            _S,
            "layout",
            "major",
            "an element runs past the slide's edge",
            "shrink or split the content so every element fits inside the slide box",
        ),
        DefectCode(
            "text_clipped",
            _S,
            "layout",
            "major",
            "text is cut by the slide edge or by its box",
            "give the text box room (smaller font, less text, or no fixed height with overflow hidden)",
        ),
        DefectCode(
            "overlap",
            _S,
            "layout",
            "major",
            "elements overlap so that text or a figure cannot be read",
            "move or resize the overlapping elements so they no longer intersect",
        ),
        DefectCode(
            "low_contrast",
            _S,
            "style",
            "major",
            "text is hard to read against what is behind it",
            "raise the contrast between the text and what is behind it (WCAG 4.5:1, 3:1 for large text)",
        ),
        DefectCode(
            "broken_image",
            _S,
            "render",
            "critical",
            "an image is missing, broken, or shows a placeholder icon",
            "point the image at a file that exists in the workspace",
        ),
        DefectCode("blank", _S, "render", "critical", "the slide is empty or nearly empty", "put the slide's content on it"),
        DefectCode(
            "size_mismatch",
            _S,
            "layout",
            "major",
            "the page is laid out for another slide size than the one asked for",
            "lay the page out at the slide size asked for (fixed width and height on the root)",
        ),
        DefectCode(
            "unreadable",
            _J,
            "style",
            "critical",
            "text is illegible (tiny, clashing colours, garbled characters or tofu boxes)",
            "make the text legible: a larger size, a contrasting colour, a font that has its characters",
        ),
        DefectCode(
            "other",
            _J,
            "style",
            "major",
            "anything else that makes the slide unfit to present (say what)",
            "fix what the detail names",
        ),
        DefectCode(
            "missing_asset",
            _M,
            "integrity",
            "major",
            "an image the manuscript links is not in the workspace",
            "download or create the image into assets/ and link it with a workspace-relative path",
        ),
        DefectCode(
            "external_url",
            _M,
            "integrity",
            "major",
            "an image is linked by a URL, not a file in the workspace",
            "download the image into assets/ and link the local copy",
        ),
        DefectCode(
            "duplicate_image",
            _M,
            "integrity",
            "minor",
            "the same image is used more than once",
            "use each image once, or replace the repeat with another visual",
        ),
        DefectCode(
            "slide_count",
            _M,
            "constraint",
            "major",
            "the manuscript has another number of slides than asked for",
            "merge or split slides to meet the required slide count",
        ),
        DefectCode(
            "language",
            _M,
            "constraint",
            "major",
            "the manuscript is not in the language asked for",
            "write the manuscript in the required language",
        ),
        DefectCode("missing_alt", _M, "format", "minor", "an image has no alt text", "add descriptive alt text to the image"),
        DefectCode(
            "empty_slide", _M, "format", "major", "a manuscript slide has no content", "give the slide content or remove it"
        ),
        DefectCode(
            "duplicate_slides",
            _C,
            "content",
            "major",
            "two slides carry the same or nearly the same text",
            "merge the slides or give each its own point",
        ),
        DefectCode(
            "repeated_text",
            _C,
            "content",
            "major",
            "a bullet or sentence is repeated across or within slides",
            "say each point once",
        ),
        DefectCode(
            "truncated_text",
            _C,
            "content",
            "major",
            "text is cut mid-sentence (a trailing ellipsis, a fragment)",
            "write whole sentences",
        ),
        DefectCode(
            "placeholder_text",
            _C,
            "content",
            "major",
            "placeholder text or generic numbered headings stand in for content",
            "replace the placeholder with the real content",
        ),
        DefectCode(
            "request_echo",
            _C,
            "content",
            "major",
            "the request itself is pasted as slide content",
            "write the content the request asks for instead of repeating it",
        ),
        DefectCode(
            "language_mix",
            _C,
            "content",
            "major",
            "the body text is mostly not in the language asked for",
            "write the slides in the requested language (names and technical terms may stay as they are)",
        ),
        DefectCode(
            "empty_slides",
            _C,
            "content",
            "major",
            "content slides hold nothing but a heading",
            "give each content slide its content, or remove it",
        ),
    ),
    lambda entry: entry.code,
    "defect code",
)
