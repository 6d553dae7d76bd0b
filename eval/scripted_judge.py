"""The scripted describer and judge (`judge=scripted`): fixed rules over measurements. Not a model.

They measure each slide for real: word count from the deck PDF's text layer (CJK
characters count half a word), raster images placed on the page, the share of the
slide covered by anything but the background ("ink"), the main colours and the
colourfulness (Hasler and Suesstrunk, 2003) of the image, the layout defects the
renderer measured, and the content checks of the filters' content gate that fail on
the slide (duplicate, repeated, cut or placeholder text, the request pasted, the wrong
language, a bare heading): each costs the slide a Content point. The describer writes
those facts as a description; the judge scores them by the rules below. Every reason
they give says what they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from PIL import Image

from core.records import ModelUse
from core.seams.judging import Score, SlideDescription, SlideScores, SlideView

LABEL = "scripted judge: rule-based measurements, not a model"
RULES_VERSION = "2"
THUMBNAIL_PX = 320
TEXT_RANGE = (12, 90)  # word equivalents of a readable slide
TEXT_HEAVY = 150
INK_RANGE = (0.08, 0.6)  # covered share of a slide with visual elements but room to breathe
CONTENT_DEFECTS = frozenset({"text_clipped", "overflow", "broken_image", "blank"})
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f0-9]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(frozen=True)
class SlideMeasures:
    words: int | None  # None: no text layer (bare images)
    images: int | None
    ink: float
    colours: int  # 3-bit-per-channel colours covering at least 1% of the slide
    colourfulness: float
    defects: tuple[tuple[str, str], ...]  # (code, severity)
    content: tuple[str, ...] = ()  # failing content checks (filters.content codes)


def word_equivalents(text: str) -> int:
    return len(_LATIN_WORD.findall(text)) + (len(_CJK.findall(text)) + 1) // 2


def measure(slide: SlideView) -> SlideMeasures:
    with Image.open(slide.png) as img:
        rgb = img.convert("RGB")
        rgb.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
        pixels = np.asarray(rgb, dtype=np.int32).reshape(-1, 3)
    bins = (pixels >> 5) @ np.array([64, 8, 1])
    counts = np.bincount(bins, minlength=512)
    background = pixels[bins == counts.argmax()].mean(axis=0)
    ink = float((np.abs(pixels - background).max(axis=1) > 40).mean())
    rg = pixels[:, 0] - pixels[:, 1]
    yb = (pixels[:, 0] + pixels[:, 1]) / 2 - pixels[:, 2]
    colourfulness = float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))
    return SlideMeasures(
        words=word_equivalents(slide.page.text) if slide.page else None,
        images=slide.page.images if slide.page else None,
        ink=ink,
        colours=int((counts >= 0.01 * len(bins)).sum()),
        colourfulness=colourfulness,
        defects=tuple((d.code, d.severity) for d in slide.defects),
        content=slide.content,
    )


def _defect_list(defects: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{code} ({severity})" for code, severity in defects) or "none"


class ScriptedDescriber:
    identity = f"scripted-describer rules={RULES_VERSION}"
    reads_content = True
    use = ModelUse("scripted-describer", "scripted")
    templates: tuple[str, ...] = ()

    async def describe(self, slide: SlideView) -> SlideDescription:
        m = measure(slide)
        words = "no text layer" if m.words is None else f"{m.words} words of text"
        images = "" if m.images is None else f", {m.images} embedded image(s)"
        checks = ", ".join(m.content) or "none"
        return SlideDescription(
            content=f"{words}{images}; measured defects: {_defect_list(m.defects)}; failed content checks: {checks}. ({LABEL})",
            style=f"{m.colours} main colour(s), colourfulness {m.colourfulness:.0f}, {m.ink:.0%} of the slide covered. ({LABEL})",
        )


def content_score(m: SlideMeasures) -> Score:
    if (m.words or 0) < 3 and not m.images and m.ink < 0.01:
        return Score(score=1, reason=f"almost nothing on the slide ({LABEL})")
    score, reasons = 3, []
    if m.words is None:
        reasons.append("no text layer: density not measured")
    elif TEXT_RANGE[0] <= m.words <= TEXT_RANGE[1]:
        score, reasons = score + 1, [*reasons, f"balanced text ({m.words} words)"]
    elif m.words > TEXT_HEAVY:
        score, reasons = score - 1, [*reasons, f"text-heavy ({m.words} words)"]
    else:
        reasons.append(f"{m.words} words")
    if m.images:
        score, reasons = score + 1, [*reasons, f"{m.images} image(s) beside the text"]
    bad = [(c, s) for c, s in m.defects if c in CONTENT_DEFECTS and s in ("critical", "major")]
    if bad:
        score -= 1 + any(s == "critical" for _, s in bad)
        reasons.append(f"measured {_defect_list(tuple(bad))}")
    if m.content:
        score -= len(m.content)
        reasons.append(f"failed content checks: {', '.join(m.content)}")
    return Score(score=min(5, max(1, score)), reason=f"{'; '.join(reasons)} ({LABEL})")


def style_score(m: SlideMeasures) -> Score:
    if m.ink < 0.005:
        return Score(score=1, reason=f"blank slide ({LABEL})")
    score = 3
    reasons: list[str] = []
    if m.colours >= 3 or m.colourfulness >= 20:
        score, reasons = score + 1, [*reasons, f"{m.colours} main colours, colourfulness {m.colourfulness:.0f}"]
    else:
        reasons.append("nearly monochrome")
    if m.images or INK_RANGE[0] <= m.ink <= INK_RANGE[1]:
        score, reasons = score + 1, [*reasons, f"visual elements, {m.ink:.0%} covered"]
    else:
        reasons.append(f"{m.ink:.0%} covered")
    critical = sum(s == "critical" for _, s in m.defects)
    major = sum(s == "major" for _, s in m.defects)
    if critical or major:
        score -= min(3, 2 * critical + major)
        reasons.append(f"measured {_defect_list(m.defects)}")
    return Score(score=min(5, max(1, score)), reason=f"{'; '.join(reasons)} ({LABEL})")


class ScriptedJudge:
    identity = f"scripted-judge rules={RULES_VERSION}"
    reads_content = True
    use = ModelUse("scripted-judge", "scripted")
    templates: tuple[str, ...] = ()

    async def score(self, slide: SlideView, description: SlideDescription) -> SlideScores:
        m = measure(slide)
        return SlideScores(content=content_score(m), style=style_score(m))
