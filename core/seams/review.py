"""What the critic (`core.protocols.Critic`) sees of one inspection, and its review: findings in the defect taxonomy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pydantic

from core.defects import Defect, FindingCategory, ManuscriptIssue, SeverityName


@dataclass(frozen=True)
class Inspection:
    """What the critic is allowed to see of one inspection."""

    tool: str
    artifact: str  # workspace-relative path of the HTML or markdown file
    source: str
    measured: tuple[Defect, ...] | tuple[ManuscriptIssue, ...]  # defects (slides) or issues (manuscripts), as measured
    image: str | None = None  # workspace-relative rendered PNG
    details: dict[str, Any] | None = None  # slide size and aspect, or the manuscript's constraints

    @property
    def ref(self) -> str:
        return f"{self.tool}:{self.artifact}" + (f":{self.image}" if self.image else "")


class Finding(pydantic.BaseModel):
    category: FindingCategory
    severity: SeverityName
    evidence: str = pydantic.Field(min_length=1)
    fix: str = pydantic.Field(min_length=1)


class Review(pydantic.BaseModel):
    reasoning: str = ""
    findings: list[Finding] = pydantic.Field(default_factory=list)
