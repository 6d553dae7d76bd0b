"""The consistency gate: does every critic injection get a revision that addresses it?

For each injection the judge sees the critic's findings and the agent's answer (its
actions and the net diff of what they wrote, up to the next inspection of the reviewed
artifact; see `filters.revisions`) and marks every finding addressed, ignored or
contradicted. A trajectory fails when any finding of any injection is not addressed
(reflection-action inconsistency). No injections: passes without a judge call.

A judge reply must mark every finding once. Its "passed" summary and its per-finding
statuses must agree to pass: "passed": true beside an ignored finding rejects (the
finding is named, so it decides); "passed": false with every finding addressed names
nothing to reject for, so the reply is refused and the judge asked again.

With llm=scripted the judge is `RuleRevisionJudge`, a rule-based stand-in labelled as such in
every verdict: a finding counts as addressed when the reviewed artifact changed after
the injection and, where the finding names elements (`#id`, `.class`, or a bare HTML
tag, as the measured evidence "<code> at <element>: ..." gives them), a changed line of
the artifact mentions one of them; without named elements any change of the artifact
counts. It cannot see "contradicted", nor a fix made in another file (a shared stylesheet).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import ClassVar, Literal

import pydantic

from core.llm.json_reply import ask_json
from core.prompts import render
from core.protocols import Gate, Model, Play, RevisionJudge
from core.records import Message, Verdict
from core.seams.candidate import Candidate
from core.seams.review import Finding
from core.seams.revision import Revision
from filters.config import FiltersConfig
from filters.gates import SCRIPTED_LABEL, GateSpec
from filters.revisions import revisions

GATE = "consistency"
PROMPTS = Path(__file__).parent / "prompts"

_MEASURED_ELEMENT = re.compile(r"^\w+ at (.+?):")
_SELECTOR_NAME = re.compile(r"[#.]([A-Za-z_][\w-]*)")
_BARE_TAG = re.compile(r"[a-z][a-z0-9]*")


class FindingCheck(pydantic.BaseModel):
    finding: int
    status: Literal["addressed", "ignored", "contradicted"]
    reason: str = pydantic.Field(min_length=1)


class ConsistencyReply(pydantic.BaseModel):
    expected: ClassVar[int] = 0  # how many findings the judge was shown (set per request)
    reasoning: str = ""
    findings: list[FindingCheck]
    passed: bool

    @pydantic.model_validator(mode="after")
    def _complete(self) -> ConsistencyReply:
        numbers = sorted(c.finding for c in self.findings)
        if numbers != list(range(1, self.expected + 1)):
            raise ValueError(f"'findings' must judge each of findings 1-{self.expected} exactly once, got {numbers}")
        if not self.passed and all(c.status == "addressed" for c in self.findings):
            raise ValueError(
                "'passed' is false but every finding is marked addressed: mark the finding(s) not addressed, or set passed to true"
            )
        return self


def reply_schema(findings: int) -> type[ConsistencyReply]:
    return type(f"ConsistencyReply{findings}", (ConsistencyReply,), {"expected": findings})


def _where(revision: Revision) -> str:
    return f"{revision.agent} step {revision.injection.step} ({revision.artifact})"


def _finding(number: int, finding: Finding) -> str:
    evidence = " ".join(finding.evidence.split())
    return f"finding {number} [{finding.category}/{finding.severity}] {evidence[:160]}"


class ModelRevisionJudge:
    label: str | None = None

    def __init__(self, model: Model, cfg: FiltersConfig):
        self.model, self.cfg = model, cfg

    def request(self, revision: Revision, language: str) -> list[Message]:
        prompt = render(
            PROMPTS,
            "consistency.j2",
            artifact=revision.artifact,
            tool=revision.tool,
            findings=revision.findings,
            actions=revision.actions,
            diff=revision.diff_text(self.cfg.consistency_max_diff_chars),
            reinspected=revision.reinspected,
            language=language,
        )
        return [Message("user", prompt)]

    async def check(self, revision: Revision, language: str) -> list[str]:
        schema = reply_schema(len(revision.findings))
        reply = await ask_json(self.model, self.request(revision, language), schema, self.cfg.json_retries)
        failures = [
            f"{_where(revision)}: {_finding(c.finding, revision.findings[c.finding - 1])}: {c.status} ({c.reason.strip()})"
            for c in sorted(reply.findings, key=lambda c: c.finding)
            if c.status != "addressed"
        ]
        if failures and reply.passed:
            failures.append(f"{_where(revision)}: the judge summary said passed, but the findings marked not addressed decide")
        return failures


class RuleRevisionJudge:
    label: str | None = SCRIPTED_LABEL

    async def check(self, revision: Revision, language: str) -> list[str]:
        changed = revision.artifact_lines()
        failures = []
        for number, finding in enumerate(revision.findings, start=1):
            names = anchors(finding.evidence, revision.artifact)
            if names:
                hit = any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", line) for n in names for line in changed)
                why = None if hit else f"no changed line mentions {', '.join(sorted(names))}"
            else:
                why = None if revision.artifact_changed else f"{revision.artifact} did not change"
            if why:
                after = "before it was inspected again" if revision.reinspected else "before the trajectory ended"
                failures.append(f"{_where(revision)}: {_finding(number, finding)}: ignored ({why} {after})")
        return failures


def anchors(evidence: str, artifact: str) -> set[str]:
    """Element names a finding points at: ids and classes of the measured element, or its bare HTML tag."""
    match = _MEASURED_ELEMENT.match(evidence)
    if not match:
        return set()
    element = match.group(1).strip()
    names = set(_SELECTOR_NAME.findall(element))
    if not names and artifact.endswith((".html", ".htm")) and _BARE_TAG.fullmatch(element) and element not in ("html", "body"):
        names = {element}
    return names


class ConsistencyGate:
    name = GATE

    def __init__(self, checker: RevisionJudge):
        self.checker = checker

    async def judge(self, candidate: Candidate) -> Verdict:
        found = [r for trajectory in candidate.trajectories() for r in revisions(trajectory)]
        label = (self.checker.label,) if self.checker.label else ()
        task_id = candidate.task.task_id
        if not found:
            return Verdict(task_id=task_id, gate=GATE, passed=True, score=1.0, reasons=("no critic injections", *label))
        results = await asyncio.gather(*(self.checker.check(r, candidate.language) for r in found))
        failed = sum(bool(r) for r in results)
        return Verdict(
            task_id=task_id,
            gate=GATE,
            passed=not failed,
            category=GATE if failed else None,
            score=1 - failed / len(found),
            reasons=(
                *(reason for r in results for reason in r),
                f"{len(found) - failed} of {len(found)} injection(s) addressed",
                *label,
            ),
        )


def _players(cfg: FiltersConfig) -> Play[Gate]:
    """Judged by the role's model, or (scripted) by the rules: a finding's evidence must reach the artifact."""
    return Play(lambda client: ConsistencyGate(ModelRevisionJudge(client, cfg)), lambda _: ConsistencyGate(RuleRevisionJudge()))


SPEC = GateSpec(GATE, role="judge", players=_players)
