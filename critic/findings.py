"""How measured defects map to the critic's findings (`core.review.Finding`, the paper's defect taxonomy), and their severities."""

from __future__ import annotations

import json

from core.defects import defect_code
from core.review import Finding
from critic.config import Severity

MANUSCRIPT_CATEGORIES = ("integrity", "constraint", "format")
SLIDE_CATEGORIES = ("layout", "render", "style")
SEVERITY_RANK = {Severity.critical.value: 3, Severity.major.value: 2, Severity.minor.value: 1}


def at_least(findings: list[Finding], min_severity: str) -> list[Finding]:
    floor = SEVERITY_RANK[min_severity]
    return [f for f in findings if SEVERITY_RANK[f.severity] >= floor]


def findings_from_measurements(measured: list[dict]) -> list[Finding]:
    """The rules critic: one finding per measured defect or manuscript issue."""
    findings = []
    for item in measured:
        code = item["code"]
        entry = defect_code(code)  # core/defects.py: an unknown code is an error, never a silent "format"
        where = item.get("element") or (f"slide {item['slide']}" if item.get("slide") else "")
        findings.append(
            Finding(
                category=entry.category,
                severity=item.get("severity", entry.severity),
                evidence=f"{code}{' at ' + where if where else ''}: {item.get('detail', '')}".strip(),
                fix=entry.fix,
            )
        )
    return findings


def findings_json(findings: list[Finding]) -> str:
    return json.dumps([f.model_dump() for f in findings], ensure_ascii=False)
