"""The scripted baseline's built-in designs: palettes, typography and an HTML slide template."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from core.prompts import render

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Design:
    name: str
    background: str
    text: str
    accent: str
    muted: str
    font: str
    motif: str  # a sentence for design_plan.md

    def high_contrast(self) -> Design:
        """The same design with pure black/white text: the fix for low contrast."""
        dark = _luminance(self.background) < 0.4
        return replace(self, text="#ffffff" if dark else "#000000", muted="#f0f0f0" if dark else "#202020")


DESIGNS = (
    Design(
        "clean",
        "#ffffff",
        "#1f2933",
        "#2563eb",
        "#52606d",
        "'Noto Sans', 'Noto Sans CJK SC', sans-serif",
        "white canvas, a blue accent bar under each title, generous margins",
    ),
    Design(
        "midnight",
        "#0f172a",
        "#e2e8f0",
        "#38bdf8",
        "#94a3b8",
        "'Noto Sans', 'Noto Sans CJK SC', sans-serif",
        "dark navy canvas, cyan accents, light text for focus",
    ),
    Design(
        "earth",
        "#f5f0e6",
        "#3d3425",
        "#5f7f3f",
        "#6b5d45",
        "'Noto Serif', 'Noto Serif CJK SC', serif",
        "warm paper tones, olive accents, serif type for a calm, natural feel",
    ),
    Design(
        "academic",
        "#fbfbfd",
        "#111827",
        "#8b1e3f",
        "#4b5563",
        "'Noto Serif', 'Noto Serif CJK SC', serif",
        "restrained layout, burgundy rules, serif titles suited to a lecture",
    ),
)


def _luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def design_for(task_id: str) -> Design:
    """A design picked deterministically from the task id."""
    return DESIGNS[int(hashlib.sha1(task_id.encode()).hexdigest(), 16) % len(DESIGNS)]


def design_plan(design: Design, language: str) -> str:
    return render(TEMPLATES, f"design_plan.{'zh' if language == 'zh' else 'en'}.md.j2", d=design)


def slide_html(
    design: Design,
    width: int,
    height: int,
    title: str,
    bullets: list[str],
    image: str | None,
    caption: str = "",
    scale: float = 1.0,
    stacked: bool = False,
    cover: bool = False,
) -> str:
    """One standalone slide. `scale` shrinks the type (the fix for overflow)."""
    unit = min(width / 1280, height / 720) if width >= height else width / 1280
    return render(
        TEMPLATES,
        "slide.html.j2",
        d=design,
        width=width,
        height=height,
        title=title,
        bullets=bullets,
        image=image,
        caption=caption,
        title_px=round(46 * unit * scale),
        body_px=round(26 * unit * scale),
        pad=round(56 * unit),
        stacked=stacked or width < height,
        cover=cover,
    )
