"""What eval's judges see of a deck and what they answer (the Describer, Judge and ChecklistJudge seams)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal, Sequence

import pydantic

from core.defects import Defect


@dataclass(frozen=True)
class PageFacts:
    text: str  # the page's text layer, NFKC-normalised
    images: int  # raster images placed on the page


@dataclass(frozen=True)
class SlideView:
    number: int  # from 1
    png: Path
    page: PageFacts | None = None  # None: no PDF (bare images)
    defects: tuple[Defect, ...] = ()  # measured by the renderer
    content: tuple[str, ...] = ()  # the content checks that fail on this slide (filters.content codes)

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the slide image: the key of every cached description, score and feature."""
        return hashlib.sha256(self.png.read_bytes()).hexdigest()


class SlideDescription(pydantic.BaseModel):
    content: str = pydantic.Field(min_length=1)  # text density and quality, image relevance
    style: str = pydantic.Field(min_length=1)  # visual consistency, colour, visual elements


class Score(pydantic.BaseModel):
    score: int = pydantic.Field(ge=1, le=5)
    reason: str = pydantic.Field(min_length=1)


class SlideScores(pydantic.BaseModel):
    content: Score
    style: Score


@dataclass(frozen=True)
class DeckInView:
    """What the judge is shown of one deck."""

    instruction: str
    pdf: Path
    slides: Sequence[SlideView]
    source: str = ""  # the source document's text, where the task has one

    @property
    def text(self) -> str:
        return "\n\n".join(f"[slide {s.number}] {s.page.text if s.page else ''}" for s in self.slides)


class Answer(pydantic.BaseModel):
    check_id: str
    answer: Literal["yes", "no", "not_applicable"]
    reason: str = pydantic.Field(min_length=1, max_length=400)
