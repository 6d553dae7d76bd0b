"""The checklist judge: each check on a deck answered "yes", "no" or "not_applicable", with a one-line reason.

A model judge (`ModelChecklistJudge`, role `checklist_judge` on `judge.endpoint`) answers a batch of checks
per call (`judge.checklist_batch`, 1 by default: one call per check, as PresentBench judges) from what the
checks need: the slide images (or their text, for a model that reads none), the request, and the source
document's text for the checks about content. The offline stand-in (`RuleChecklistJudge`) decides the checks that
carry a rule (core.records.Check.rule) from the deck itself, the way the constraint gate does, and answers
"not_applicable" to every other one, saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Sequence

import pydantic

from core.config import LLMConfig
from core.language import normalize_text
from core.llm.json_reply import ask_json
from core.prompts import render
from core.protocols import Model
from core.records import Check, CheckClass, Message, ModelUse
from core.seams.judging import Answer, DeckInView
from eval.checklist.score import rule_constraints
from filters.config import FiltersConfig
from filters.constraints import check_deck

PROMPTS = Path(__file__).parents[1] / "prompts"  # eval/prompts
STAND_IN = "checklist-rules"
NOT_DECIDED = "the offline stand-in judge decides only the checks with a rule (slide count, language, aspect, mentions)"
SOURCE_CHARS = 12_000  # of the source document shown with the content checks
CONTENT = (CheckClass.completeness, CheckClass.correctness, CheckClass.fidelity)


class _Answers(pydantic.BaseModel):
    answers: list[Answer]


class RuleChecklistJudge:
    """The offline stand-in: rules decide what they can, everything else is "not_applicable"."""

    use = ModelUse(STAND_IN, "scripted", 0.0, 1.0, 0)

    async def answer(self, checks: Sequence[Check], deck: DeckInView) -> list[Answer]:
        return [self.decide(check, deck) for check in checks]

    @staticmethod
    def decide(check: Check, deck: DeckInView) -> Answer:
        constraint = rule_constraints(check.rule)
        if constraint is not None:
            report = check_deck(deck.pdf, constraint, FiltersConfig())
            (measured,) = report.checks.values()
            verdict: Literal["yes", "no"] = "yes" if measured.ok else "no"
            return Answer(
                check_id=check.check_id, answer=verdict, reason=f"by rule: expected {measured.expected}, got {measured.actual}"
            )
        kind, _, value = check.rule.partition(":")
        if kind == "mentions":
            found = normalize_text(value).casefold() in normalize_text(deck.text).casefold()
            where = "in" if found else "nowhere in"
            return Answer(
                check_id=check.check_id, answer="yes" if found else "no", reason=f"by rule: “{value}” is {where} the slides' text"
            )
        return Answer(check_id=check.check_id, answer="not_applicable", reason=NOT_DECIDED)


class ModelChecklistJudge:
    """Asks a model, a batch of checks per call, with what the batch needs to see."""

    def __init__(self, model: Model, cfg: LLMConfig, retries: int):
        self.model, self.retries = model, retries
        self.use = ModelUse(cfg.model, str(cfg.backend), cfg.temperature, cfg.top_p, cfg.max_tokens)

    async def answer(self, checks: Sequence[Check], deck: DeckInView) -> list[Answer]:
        needs_source = any(c.cls in CONTENT for c in checks) and bool(deck.source)
        prompt = render(
            PROMPTS,
            "checklist.j2",
            instruction=deck.instruction,
            checks=checks,
            slides_text="" if self.model.vision else deck.text,
            source=deck.source[:SOURCE_CHARS] if needs_source else "",
            slides=len(deck.slides),
        )
        images = tuple(s.png.name for s in deck.slides) if self.model.vision else ()
        root = deck.slides[0].png.parent if images else None
        reply = await ask_json(self.model, [Message("user", prompt, images=images)], _Answers, self.retries, image_root=root)
        by_id = {a.check_id: a for a in reply.answers}
        missing = [c.check_id for c in checks if c.check_id not in by_id]
        if missing:
            raise ValueError(f"the judge did not answer {', '.join(missing)}")
        return [by_id[c.check_id] for c in checks]


def fidelity_checks(slides: int) -> tuple[Check, ...]:
    """The per-slide fidelity checks of a deck, written when it is judged: one per slide it has."""
    return tuple(
        Check(f"fidelity-{n:02d}", CheckClass.fidelity, f"Everything slide {n} states is supported by the source document.")
        for n in range(1, slides + 1)
    )
