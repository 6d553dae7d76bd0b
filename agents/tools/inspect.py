"""The Reason tools that ground reflection in the environment: inspect_slide and inspect_manuscript.

They need two resources in the tool context: `renderer` (render.renderer.Renderer,
one per worker process) and, optionally, `constraints` (core.records.Constraints)
for the manuscript's slide-count and language checks. Their observations carry
what they measured (`core.seams.steps.SlideMeasured`, `ManuscriptMeasured`) for the critic.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import Field

from agents.manuscript import inspect_manuscript as diagnose_manuscript
from agents.tools.registry import Tool, ToolContext, ToolError
from core.records import Constraints
from core.seams.steps import ManuscriptMeasured, Observation, SlideMeasured
from render.inspection import inspect_slide as measure_slide
from render.layout_summary import layout_summary
from render.renderer import BLOCKED_EXTERNAL, BLOCKED_OUTSIDE, RenderError

INSPECT_TOOLS = ("inspect_slide", "inspect_manuscript")
RENDERER = "renderer"
CONSTRAINTS = "constraints"
ASPECT = "aspect"
VISION = "vision"  # False when the agent's model reads no images (llm.vision=false)
IMAGE_FORMAT = "image_format"  # what renders are written as: the agent's server's format (Profile.render_format)
Aspect = Literal["16:9", "4:3", "A1", "A2", "A3", "A4"]


async def inspect_slide(
    ctx: ToolContext,
    html_file: Annotated[str, Field(description="The slide's HTML file in the workspace, e.g. 'slides/slide_01.html'.")],
    aspect_ratio: Annotated[Aspect | None, Field(description="Slide format; default: the task's.")] = None,
) -> Observation:
    """Render a slide in the browser and look at it: returns the rendered image and the layout defects measured in the page
    (for a model that reads no images, a text description of the layout instead of the image)."""
    aspect = aspect_ratio or ctx.resources.get(ASPECT) or "16:9"
    if not html_file.lower().endswith((".html", ".htm")):
        raise ToolError(f"{html_file!r} is not an HTML file.")
    path = str(ctx.workspace.resolve(html_file))
    if ctx.workspace.stat(path) is None:
        raise ToolError(f"{html_file!r} does not exist.")
    ctx.workspace.mkdir("renders")
    png = _next_render(ctx, PurePosixPath(path).stem, ctx.resources.get(IMAGE_FORMAT, "png"))
    try:
        result = await measure_slide(ctx.resources[RENDERER], ctx.workspace.root, path, aspect, ctx.workspace.root / png)
    except RenderError as exc:
        raise ToolError(f"{html_file!r} could not be rendered: {exc}") from exc
    measured = SlideMeasured(path, str(png), aspect, result.width, result.height, result.defects)  # the critic's view
    images: tuple[str, ...]
    if ctx.resources.get(VISION, True):
        header, seen, images = (
            f"Rendered {path} at {result.width}x{result.height} ({aspect}); the image is attached.",
            None,
            (str(png),),
        )
    else:  # a model that reads no images gets the layout in text instead
        header, seen, images = (
            f"Rendered {path} at {result.width}x{result.height} ({aspect}).",
            layout_summary(result.layout, result.width, result.height),
            (),
        )
    text = "\n".join(filter(None, [header, result.report(), blocked_note(result.blocked), seen]))
    return Observation(text, images=images, measured=measured)


BLOCKED_KINDS = {BLOCKED_EXTERNAL: "to external URLs", BLOCKED_OUTSIDE: "to files outside the workspace"}
BLOCKED_SHOWN = 3


def blocked_note(blocked: Mapping[str, str]) -> str | None:
    """What the slide tried to load and was refused (fonts, styles, images, scripts), so the model can fetch it instead."""
    if not blocked:
        return None
    kinds = Counter(BLOCKED_KINDS.get(why, why) for why in blocked.values())
    shown = ", ".join(list(blocked)[:BLOCKED_SHOWN]) + (
        f" and {len(blocked) - BLOCKED_SHOWN} more" if len(blocked) > BLOCKED_SHOWN else ""
    )
    return (
        f"{len(blocked)} request(s) of the slide were blocked ({', '.join(f'{n} {kind}' for kind, n in kinds.items())}): {shown}. "
        "A slide loads only files in the workspace: download what it needs with download_file and link the local copy."
    )


def _next_render(ctx: ToolContext, stem: str, image_format: str) -> PurePosixPath:
    """A new file per inspection (`renders/slide_01.3.webp`): the trajectory keeps each version it saw."""
    taken = {str(e.path) for e in ctx.workspace.entries("renders", 1)}
    version = 1
    while f"renders/{stem}.{version}.{image_format}" in taken:
        version += 1
    return PurePosixPath("renders") / f"{stem}.{version}.{image_format}"


async def inspect_manuscript(
    ctx: ToolContext,
    md_file: Annotated[str, Field(description="The manuscript's markdown file, e.g. 'manuscript.md'.")],
) -> Observation:
    """Check the manuscript: slide count, language, and per-slide issues (missing or remote images, missing alt text, duplicates, empty slides)."""
    path = str(ctx.workspace.resolve(md_file))
    if ctx.workspace.stat(path) is None:
        raise ToolError(f"{md_file!r} does not exist.")
    constraints: Constraints | None = ctx.resources.get(CONSTRAINTS)
    wanted = (
        {"slides_min": constraints.slides_min, "slides_max": constraints.slides_max, "language": constraints.language}
        if constraints
        else None
    )
    try:
        report = await asyncio.to_thread(diagnose_manuscript, ctx.workspace.root / path, ctx.workspace.root, wanted)
    except ValueError as exc:
        raise ToolError(str(exc)) from exc
    lines = [f"{path}: {report.slides} slide(s), language {report.language}."]
    issues = report.issues
    lines += [f"- {i.code}" + (f" (slide {i.slide})" if i.slide else "") + f": {i.detail}" for i in issues]
    lines.append("No issues found." if not issues else f"{len(issues)} issue(s) to fix.")
    return Observation("\n".join(lines), measured=ManuscriptMeasured(path, report, str(wanted or "none")))


TOOLS = (
    Tool.from_function(inspect_slide, "presenter"),
    Tool.from_function(inspect_manuscript, "researcher"),
)
