"""How measured defects map to the critic's findings (`core.seams.review.Finding`, the paper's defect taxonomy), and their severities."""

from __future__ import annotations

import json
from typing import Sequence, cast

from core.defects import SEVERITY_RANK, Defect, FindingCategory, ManuscriptIssue, defect_code
from core.seams.review import Finding


def at_least(findings: list[Finding], min_severity: str) -> list[Finding]:
    floor = SEVERITY_RANK[min_severity]
    return [f for f in findings if SEVERITY_RANK[f.severity] >= floor]


def findings_from_measurements(measured: Sequence[Defect | ManuscriptIssue]) -> list[Finding]:
    """The rules critic: one finding per measured defect or manuscript issue."""
    findings = []
    for item in measured:
        entry = defect_code(item.code)  # core/defects.py: an unknown code is an error, never a silent "format"
        if isinstance(item, Defect):
            severity, where = item.severity, item.element
        else:
            severity, where = entry.severity, f"slide {item.slide}" if item.slide else ""
        findings.append(
            Finding(
                # a slide's or manuscript's code (no content code is measured here): one of the critic's categories
                category=cast(FindingCategory, entry.category),
                severity=severity,
                evidence=f"{item.code}{' at ' + where if where else ''}: {item.detail}".strip(),
                fix=entry.fix,
            )
        )
    return findings


def findings_json(findings: list[Finding]) -> str:
    return json.dumps([f.model_dump() for f in findings], ensure_ascii=False)
