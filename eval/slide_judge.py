"""Content and Style, PPTEval's two steps: describe each slide image, then score the description.

A describer (a vision model, role `describer`) writes what a slide holds along the content
aspects (text density and quality, image relevance) and the style aspects (visual
consistency, colour, visual elements); a judge (role `judge`) scores the description 1-5
against the rubrics in eval/prompts/, with a reason per dimension. A deck's Content and
Style are the means over its slides. Descriptions and scores are cached on disk by the
slide image's hash and the describer's / judge's identity (model name, temperature, prompts), so
re-scoring a run costs no model call. A slide whose reply stays malformed after the
re-asks is left unjudged (nothing cached): its deck has no Content/Style this time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import TypeVar

import pydantic

from core.config import LLMConfig
from core.llm.json_reply import JSONReplyError, ask_json
from core.llm.players import Players
from core.llm.results import ModelError
from core.prompts import cite, render
from core.protocols import Describer, Judge, Model, Play
from core.records import Message, ModelUse
from core.run.metering import note_model
from core.run.store import atomic_write_text
from core.seams.judging import SlideDescription, SlideScores, SlideView
from eval.config import JudgeConfig, describer_config
from eval.scripted_judge import ScriptedDescriber, ScriptedJudge

log = logging.getLogger(__name__)

PROMPTS = Path(__file__).parent / "prompts"
T = TypeVar("T", bound=pydantic.BaseModel)


def check_prompts() -> None:
    """Render every template once (a missing variable or a syntax error fails before any work)."""
    render(PROMPTS, "describe.j2")
    render(PROMPTS, "judge.j2", content="-", style="-")


def _prompts_digest(*names: str) -> str:
    return hashlib.sha256("".join((PROMPTS / n).read_text(encoding="utf-8") for n in names).encode()).hexdigest()[:12]


def model_identity(cfg: LLMConfig, *templates: str) -> str:
    return f"{cfg.model} t={cfg.temperature:g} prompts={_prompts_digest(*templates)}"


def model_use(cfg: LLMConfig) -> ModelUse:
    return ModelUse(cfg.model, str(cfg.backend), cfg.temperature, cfg.top_p, cfg.max_tokens)


class ModelDescriber:
    reads_content = False
    templates: tuple[str, ...] = ("describe.j2",)

    def __init__(self, model: Model, cfg: LLMConfig, retries: int):
        self.model, self.retries = model, retries
        self.identity = model_identity(cfg, "describe.j2")
        self.use = model_use(cfg)

    async def describe(self, slide: SlideView) -> SlideDescription:
        message = Message("user", render(PROMPTS, "describe.j2"), images=(slide.png.name,))
        return await ask_json(self.model, [message], SlideDescription, self.retries, image_root=slide.png.parent)


class ModelSlideJudge:
    reads_content = False
    templates: tuple[str, ...] = ("judge.j2",)  # with the rubrics it includes

    def __init__(self, model: Model, cfg: LLMConfig, retries: int):
        self.model, self.retries = model, retries
        self.identity = model_identity(cfg, "judge.j2", "rubric_content.j2", "rubric_style.j2")
        self.use = model_use(cfg)

    async def score(self, slide: SlideView, description: SlideDescription) -> SlideScores:
        prompt = render(PROMPTS, "judge.j2", content=description.content, style=description.style)
        return await ask_json(self.model, [Message("user", prompt)], SlideScores, self.retries)


class JudgeCache:
    """JSON files under `root/<kind>/<key[:2]>/<key>.json`, written atomically."""

    def __init__(self, root: Path):
        self.root = root

    @staticmethod
    def key(*parts: str) -> str:
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str, schema: type[T]) -> T | None:
        path = self._path(kind, key)
        if not path.is_file():
            return None
        try:
            return schema.model_validate_json(path.read_text(encoding="utf-8"))
        except pydantic.ValidationError:
            log.warning("%s: unreadable cache entry, asking again", path)
            return None

    def put(self, kind: str, key: str, value: pydantic.BaseModel) -> None:
        path = self._path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(value.model_dump(), ensure_ascii=False))


@dataclass(frozen=True)
class SlideJudgement:
    number: int
    digest: str
    description: SlideDescription
    scores: SlideScores


@dataclass(frozen=True)
class DeckJudgement:
    slides: tuple[SlideJudgement, ...]
    error: str | None = None  # why the deck is unjudged

    @property
    def content(self) -> float | None:
        return float(mean(s.scores.content.score for s in self.slides)) if self.slides and not self.error else None

    @property
    def style(self) -> float | None:
        return float(mean(s.scores.style.score for s in self.slides)) if self.slides and not self.error else None


class SlideJudging:
    """Describer + judge + cache, at most `max_concurrency` slides at once."""

    def __init__(self, describer: Describer, judge: Judge, cache: JudgeCache, max_concurrency: int):
        self.describer, self.judge, self.cache = describer, judge, cache
        self._slots = asyncio.Semaphore(max_concurrency)

    async def slide(self, slide: SlideView) -> SlideJudgement:
        described = self.cache.key(
            slide.digest, *(slide.content if self.describer.reads_content else ()), self.describer.identity
        )
        scored = self.cache.key(described, *(slide.content if self.judge.reads_content else ()), self.judge.identity)
        async with self._slots:
            description = self.cache.get("descriptions", described, SlideDescription)
            if description is None:
                description = await self.describer.describe(slide)
                self.cache.put("descriptions", described, description)
            scores = self.cache.get("scores", scored, SlideScores)
            if scores is None:
                scores = await self.judge.score(slide, description)
                self.cache.put("scores", scored, scores)
        return SlideJudgement(slide.number, slide.digest, description, scores)

    async def deck(self, slides: list[SlideView]) -> DeckJudgement:
        """Every slide judged (those that fail do not stop the others); unjudged if any failed.
        The current unit names the describer's and judge's models and templates, cached answers included."""
        for role, part in (("describer", self.describer), ("judge", self.judge)):
            note_model(role, part.use)
            for template in part.templates:
                cite(PROMPTS, template)
        results = await asyncio.gather(*(self.slide(s) for s in slides), return_exceptions=True)
        failed = [(s, r) for s, r in zip(slides, results) if isinstance(r, BaseException)]
        for _, exc in failed:
            if not isinstance(exc, (JSONReplyError, ModelError)):
                raise exc
        if failed:
            slide, exc = failed[0]
            log.warning("%s: %d slide(s) could not be judged: %s", slide.png, len(failed), exc)
            return DeckJudgement((), error=f"judge: slide {slide.number}: {exc}")
        return DeckJudgement(tuple(r for r in results if isinstance(r, SlideJudgement)))


# ---------------------------------------------------------------- the describer and judge a JudgeConfig names

ROLES = ("describer", "judge")


def cache_root(cfg: JudgeConfig, run_dir: Path) -> Path:
    return Path(cfg.cache_dir).expanduser().resolve() if cfg.cache_dir else run_dir / "judge_cache"


def judge_endpoints(cfg: JudgeConfig) -> dict[str, LLMConfig]:
    """The endpoints of the describer and the judge, by role."""
    return {"describer": describer_config(cfg), "judge": cfg.endpoint}


def build_judging(cfg: JudgeConfig, cache: Path, players: Players) -> SlideJudging:
    """The describer and judge of `cfg`, each played as its endpoint's backend says (`players` closes the
    clients; their calls count into the unit being worked on, core.run.metering), with their cache."""
    described = describer_config(cfg)
    describer: Describer = players.play_endpoint(
        described,
        "describer",
        Play[Describer](lambda client: ModelDescriber(client, described, cfg.json_retries), lambda _: ScriptedDescriber()),
    )
    judge: Judge = players.play_endpoint(
        cfg.endpoint,
        "judge",
        Play[Judge](lambda client: ModelSlideJudge(client, cfg.endpoint, cfg.json_retries), lambda _: ScriptedJudge()),
    )
    return SlideJudging(describer, judge, JudgeCache(cache), cfg.max_concurrency)
