"""The quality gate: reject decks with critical defects (overlap, broken images, blank, unreadable, cut-off text).

Cheap first: the defects measured in the final slides (deck_defects.json) at or above
`filters.quality_reject_severity` reject the deck without a judge call. Otherwise a
vision judge looks at the slide previews, `filters.quality_images_per_call` at a time,
with the lesser measured defects as hints, and names every critical defect by slide.
A reply listing a critical defect rejects even if its "passed" says otherwise; a reply
that fails the deck without naming a critical defect is refused and asked again, so
each rejection names slides and defects.

With llm=scripted there is no vision judge: the gate decides on the measured defects
alone and says so in every verdict it passes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import pydantic

from core.defects import SEVERITY_RANK, Defect, DefectSource, codes_of, defect_code
from core.llm.json_reply import ask_json
from core.prompts import render
from core.protocols import Gate, Model, Play
from core.records import ArtifactError, Message, Verdict
from core.seams.candidate import Candidate
from core.seams.deck import DeckReport
from filters.config import FiltersConfig
from filters.gates import SCRIPTED_LABEL, GateSpec

GATE = "quality"
PROMPTS = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class Slide:
    number: int
    file: str  # workspace-relative HTML
    png: str  # workspace-relative preview
    measured: tuple[Defect, ...]


def deck_slides(deck: DeckReport) -> list[Slide]:
    """The deck's slides, numbered from 1 in file order."""
    return [Slide(number, s.file, s.png, s.defects) for number, s in enumerate(deck.slides, start=1)]


def measured_line(defect: Defect) -> str:
    return defect.line().replace(" :", ":")


def measured_rejections(slides: list[Slide], min_severity: str) -> list[tuple[int, str]]:
    """(slide number, reason) per measured defect at or above `min_severity`: the pre-check, no model call."""
    floor = SEVERITY_RANK[min_severity]
    return [
        (s.number, f"slide {s.number} ({s.file}): measured {measured_line(d)}")
        for s in slides
        for d in s.measured
        if SEVERITY_RANK[d.severity] >= floor
    ]


JUDGED = (*codes_of(DefectSource.slide), *codes_of(DefectSource.judge))  # what the judge may name (core/defects.py)


class SlideDefect(pydantic.BaseModel):
    slide: int
    kind: Literal[JUDGED]  # type: ignore[valid-type]  # the table's codes, checked at run time
    critical: bool
    detail: str = pydantic.Field(min_length=1)


class QualityReply(pydantic.BaseModel):
    shown: ClassVar[tuple[int, ...]] = ()  # slide numbers of the request (set per request)
    reasoning: str = ""
    defects: list[SlideDefect] = pydantic.Field(default_factory=list)
    passed: bool

    @pydantic.model_validator(mode="after")
    def _named(self) -> QualityReply:
        unknown = sorted({d.slide for d in self.defects} - set(self.shown))
        if unknown:
            raise ValueError(f"slide(s) {unknown} were not shown; the slides shown are {list(self.shown)}")
        if not self.passed and not any(d.critical for d in self.defects):
            raise ValueError(
                "'passed' is false but no critical defect is listed: name each critical defect and its slide, or set passed to true"
            )
        return self


def reply_schema(slides: list[Slide]) -> type[QualityReply]:
    return type("QualityReply", (QualityReply,), {"shown": tuple(s.number for s in slides)})


class VisionJudge:
    def __init__(self, model: Model, cfg: FiltersConfig):
        self.model, self.cfg = model, cfg

    def request(self, batch: list[Slide], total: int, aspect: str, language: str) -> list[Message]:
        views = [{"number": s.number, "file": s.file, "measured": [measured_line(d) for d in s.measured]} for s in batch]
        kinds = [{"code": code, "description": defect_code(code).description} for code in JUDGED]
        prompt = render(PROMPTS, "quality.j2", slides=views, total=total, aspect=aspect, language=language, kinds=kinds)
        return [Message("user", prompt, images=tuple(s.png for s in batch))]

    async def critical(self, slides: list[Slide], workspace: Path, aspect: str, language: str) -> list[SlideDefect]:
        size = self.cfg.quality_images_per_call
        batches = [slides[i : i + size] for i in range(0, len(slides), size)]
        replies = await asyncio.gather(
            *(
                ask_json(
                    self.model, self.request(b, len(slides), aspect, language), reply_schema(b), self.cfg.json_retries, workspace
                )
                for b in batches
            )
        )
        return [d for reply in replies for d in reply.defects if d.critical]


class QualityGate:
    name = GATE

    def __init__(self, cfg: FiltersConfig, vision: VisionJudge | None):
        self.cfg, self.vision = cfg, vision

    async def judge(self, candidate: Candidate) -> Verdict:
        task_id = candidate.task.task_id
        deck = candidate.deck()
        workspace = candidate.workspace()
        slides = deck_slides(deck)
        measured = measured_rejections(slides, self.cfg.quality_reject_severity.value)
        if measured:
            reasons = (*(reason for _, reason in measured), "rejected on measured defects; no judge call")
            return self._verdict(task_id, slides, {number for number, _ in measured}, reasons)
        lesser = sum(len(s.measured) for s in slides)
        if self.vision is None:
            return Verdict(
                task_id=task_id,
                gate=GATE,
                passed=True,
                score=1.0,
                reasons=(f"no {self.cfg.quality_reject_severity.value} measured defect ({lesser} lesser)", SCRIPTED_LABEL),
            )
        missing = [s.png for s in slides if not (workspace / s.png).is_file()]
        if missing:
            raise ArtifactError(f"{workspace}: slide preview(s) missing: {', '.join(missing)}")
        found = await self.vision.critical(slides, workspace, deck.aspect or "free", candidate.language)
        files = {s.number: s.file for s in slides}
        reasons = tuple(f"slide {d.slide} ({files[d.slide]}): {d.kind}: {' '.join(d.detail.split())}" for d in found)
        return self._verdict(task_id, slides, {d.slide for d in found}, reasons)

    @staticmethod
    def _verdict(task_id: str, slides: list[Slide], bad: set[int], reasons: tuple[str, ...]) -> Verdict:
        return Verdict(
            task_id=task_id,
            gate=GATE,
            passed=not bad,
            category=GATE if bad else None,
            score=1 - len(bad) / len(slides),
            reasons=reasons,
        )


def _players(cfg: FiltersConfig) -> Play[Gate]:
    """The measured defects, with the role's vision model judging the slides they leave in doubt; or (scripted)
    the measured defects alone."""
    return Play(lambda client: QualityGate(cfg, VisionJudge(client, cfg)), lambda _: QualityGate(cfg, None))


SPEC = GateSpec(GATE, role="quality_judge", players=_players)
