"""What the consistency judge (`core.protocols.RevisionJudge`) sees: one critic injection and the agent's answer to it."""

from __future__ import annotations

from dataclasses import dataclass

from core.records import CriticInjection
from core.seams.review import Finding


@dataclass(frozen=True)
class Revision:
    """One injection and the agent's answer to it."""

    agent: str
    injection: CriticInjection
    findings: tuple[Finding, ...]
    tool: str  # the inspection the critic reviewed: inspect_slide | inspect_manuscript
    artifact: str  # workspace-relative path of what it reviewed
    actions: tuple[str, ...]  # one line per thing the agent said or called, in order
    diffs: tuple[tuple[str, str], ...]  # (path, diff) of every file changed in the window, the artifact first
    reinspected: bool  # the window ended at a new inspection of the artifact, not at the trajectory's end

    @property
    def artifact_changed(self) -> bool:
        return any(path == self.artifact for path, _ in self.diffs)

    def artifact_lines(self) -> list[str]:
        """The removed and added lines of the reviewed artifact's diff (no headers)."""
        return [
            line[1:]
            for path, diff in self.diffs
            if path == self.artifact
            for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]

    def diff_text(self, limit: int) -> str:
        text = "\n".join(diff for _, diff in self.diffs)
        return text if len(text) <= limit else f"{text[:limit]}\n[... diff cut at {limit} of {len(text)} characters]"
