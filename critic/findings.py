"""The critic's structured findings (the paper's defect taxonomy) and how measured defects map to them."""

from __future__ import annotations

import json
from typing import Literal

import pydantic

from critic.config import Severity

MANUSCRIPT_CATEGORIES = ("integrity", "constraint", "format")
SLIDE_CATEGORIES = ("layout", "render", "style")
SEVERITY_RANK = {Severity.critical.value: 3, Severity.major.value: 2, Severity.minor.value: 1}

# Measured codes (agents.inspection / agents.manuscript) -> taxonomy category.
CODE_CATEGORY = {
    "overflow": "layout",
    "text_clipped": "layout",
    "overlap": "layout",
    "size_mismatch": "layout",
    "broken_image": "render",
    "blank": "render",
    "low_contrast": "style",
    "missing_asset": "integrity",
    "external_url": "integrity",
    "duplicate_image": "integrity",
    "slide_count": "constraint",
    "language": "constraint",
    "missing_alt": "format",
    "empty_slide": "format",
}
FIXES = {
    "overflow": "shrink or split the content so every element fits inside the slide box",
    "text_clipped": "give the text box room (smaller font, less text, or no fixed height with overflow hidden)",
    "overlap": "move or resize the overlapping elements so they no longer intersect",
    "size_mismatch": "lay the page out at the slide size asked for (fixed width and height on the root)",
    "broken_image": "point the image at a file that exists in the workspace",
    "blank": "put the slide's content on it",
    "low_contrast": "raise the contrast between the text and what is behind it (WCAG 4.5:1, 3:1 for large text)",
    "missing_asset": "download or create the image into assets/ and link it with a workspace-relative path",
    "external_url": "download the image into assets/ and link the local copy",
    "duplicate_image": "use each image once, or replace the repeat with another visual",
    "slide_count": "merge or split slides to meet the required slide count",
    "language": "write the manuscript in the required language",
    "missing_alt": "add descriptive alt text to the image",
    "empty_slide": "give the slide content or remove it",
}


class Finding(pydantic.BaseModel):
    category: Literal["integrity", "constraint", "format", "layout", "render", "style"]
    severity: Literal["critical", "major", "minor"]
    evidence: str = pydantic.Field(min_length=1)
    fix: str = pydantic.Field(min_length=1)


class Review(pydantic.BaseModel):
    reasoning: str = ""
    findings: list[Finding] = pydantic.Field(default_factory=list)


def at_least(findings: list[Finding], min_severity: str) -> list[Finding]:
    floor = SEVERITY_RANK[min_severity]
    return [f for f in findings if SEVERITY_RANK[f.severity] >= floor]


def findings_from_measurements(measured: list[dict]) -> list[Finding]:
    """The rules critic: one finding per measured defect or manuscript issue."""
    findings = []
    for item in measured:
        code = item["code"]
        where = item.get("element") or (f"slide {item['slide']}" if item.get("slide") else "")
        findings.append(
            Finding(
                category=CODE_CATEGORY.get(code, "format"),
                severity=item.get("severity", "major"),
                evidence=f"{code}{' at ' + where if where else ''}: {item.get('detail', '')}".strip(),
                fix=FIXES.get(code, "revise the artifact"),
            )
        )
    return findings


def findings_json(findings: list[Finding]) -> str:
    return json.dumps([f.model_dump() for f in findings], ensure_ascii=False)
