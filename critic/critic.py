"""The isolated critic: reviews each inspection with a fresh context and injects its reflection.

After an `inspect_slide` / `inspect_manuscript` observation, the critic sees only
that observation (the rendered image or the manuscript diagnostics), the
artifact's source and the measured defects; never the agent's history. When it
finds defects at or above `critic.min_severity`, its reasoning enters the agent's
context as a `thinking` call (see agents.loop), marked as a critic injection.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from pathlib import Path

from core.llm.json_reply import JSONReplyError, ask_json
from core.llm.results import ModelError
from core.prompts import render
from core.protocols import Critic, Model, Play
from core.records import Message, ModelUse
from core.run.metering import note_model
from core.seams.review import Finding, Inspection, Review
from core.seams.steps import Injection, Measured, SlideMeasured, StepState
from critic.config import CriticMode
from critic.findings import at_least, findings_from_measurements, findings_json

log = logging.getLogger(__name__)

PROMPTS = Path(__file__).parent / "prompts"
MAX_SOURCE_CHARS = 12_000


class ModelCritic:
    """A separate model call (a VLM for slides) with nothing but the inspection in its context."""

    def __init__(self, model: Model, json_retries: int = 2):
        self.model = model
        self.name = model.name
        self.retries = json_retries

    def request(self, inspection: Inspection, language: str) -> list[Message]:
        source = inspection.source[:MAX_SOURCE_CHARS]
        measured = json.dumps([m.to_dict() for m in inspection.measured], ensure_ascii=False, indent=1)
        details = inspection.details or {}
        if inspection.tool == "inspect_slide":
            prompt = render(
                PROMPTS,
                "slide_review.j2",
                defects=measured,
                source=source,
                path=inspection.artifact,
                language=language,
                width=details.get("width"),
                height=details.get("height"),
                aspect=details.get("aspect"),
            )
        else:
            prompt = render(
                PROMPTS,
                "manuscript_review.j2",
                diagnostics=measured,
                source=source,
                path=inspection.artifact,
                language=language,
                constraints=details.get("constraints") or "none",
            )
        return [Message("user", prompt, images=(inspection.image,) if inspection.image else ())]

    async def review(self, inspection: Inspection, workspace: Path, language: str) -> Review:
        return await ask_json(self.model, self.request(inspection, language), Review, self.retries, image_root=workspace)


class RulesCritic:
    """Findings from the measured defects alone; no model call."""

    def __init__(self, name: str = "rules"):
        self.name = name
        self.use = ModelUse(name, "rules")

    async def review(self, inspection: Inspection, workspace: Path, language: str) -> Review:
        note_model("critic", self.use)
        findings = findings_from_measurements(inspection.measured)
        return Review(reasoning=_rules_reasoning(findings, inspection.artifact, language), findings=findings)


def _rules_reasoning(findings: list[Finding], artifact: str, language: str) -> str:
    if not findings:
        return ""
    if language == "zh":
        return f"检查 {artifact} 时发现 {len(findings)} 个问题，需要先修正再继续。"
    return f"The inspection of {artifact} shows {len(findings)} problem(s); I should fix them before moving on."


def thought(review: Review, findings: list[Finding]) -> str:
    """The text injected as the agent's own `thinking`."""
    lines = [review.reasoning.strip()] if review.reasoning.strip() else []
    lines += [f"- [{f.category}/{f.severity}] {f.evidence} -> {f.fix}" for f in findings]
    return "\n".join(lines)


def inspection_from(measured: Measured, workspace: Path) -> Inspection:
    """The critic's view of what an inspect tool measured: that, and the inspected file's source."""
    source = (workspace / measured.artifact).read_text(encoding="utf-8", errors="replace")
    if isinstance(measured, SlideMeasured):
        details = {"width": measured.width, "height": measured.height, "aspect": measured.aspect}
        return Inspection("inspect_slide", measured.artifact, source, measured.defects, measured.png, details)
    issues = measured.report.issues
    return Inspection("inspect_manuscript", measured.artifact, source, issues, None, {"constraints": measured.constraints})


class CriticHook:
    """The loop hook (core.protocols.StepHook) that runs the critic after each inspection."""

    def __init__(self, critic: Critic, min_severity: str, language: str):
        self.critic = critic
        self.min_severity = min_severity
        self.language = language
        self.findings: Counter = Counter()  # "<category>" -> count, all findings (Figure 4)
        self.errors = 0

    async def after_step(self, state: StepState) -> list[Injection]:
        """One review per inspection of the step (a turn may inspect several slides: reviewed concurrently)."""
        workspace = state.workspace
        inspections = [
            inspection_from(observation.measured, workspace)
            for observation in state.observations
            if observation.measured is not None and not observation.is_error
        ]
        reviews = await asyncio.gather(*(self._review(inspection, workspace) for inspection in inspections))
        injections = []
        for inspection, review in zip(inspections, reviews):
            if review is None:
                continue
            self.findings.update(f.category for f in review.findings)
            actionable = at_least(review.findings, self.min_severity)
            if actionable:
                injections.append(
                    Injection(thought(review, actionable), self.critic.name, findings_json(actionable), inspection.ref)
                )
        return injections

    async def _review(self, inspection: Inspection, workspace: Path) -> Review | None:
        try:
            return await self.critic.review(inspection, workspace, self.language)
        except (ModelError, JSONReplyError) as exc:
            self.errors += 1
            log.warning("critic gave no usable review of %s: %s", inspection.artifact, exc)
            return None


def make_critic_hook(mode: CriticMode | str, critic: Critic | None, min_severity: str, language: str) -> CriticHook | None:
    """The hook for `critic.mode`; None in `none` mode (the agent's own reflection only). `critic` is the
    extrinsic critic the role's backend gave (`CRITIC`)."""
    mode = CriticMode(mode)
    if mode is CriticMode.none:
        return None
    if mode is CriticMode.rules:
        return CriticHook(RulesCritic(), min_severity, language)
    if critic is None:
        raise ValueError("critic=extrinsic needs the critic role played (roles.critic or the backbone llm)")
    return CriticHook(critic, min_severity, language)


SCRIPTED_CRITIC = "scripted-critic"
# The critic role's players: a model reviewing the rendered slide, or (scripted) the measured defects read by rule.
CRITIC: Play[Critic] = Play(ModelCritic, lambda _: RulesCritic(SCRIPTED_CRITIC))
