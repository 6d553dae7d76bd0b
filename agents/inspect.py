"""Command-line inspection of one slide or one manuscript (the contract other checks rely on).

    python -m agents.inspect slide FILE.html --aspect 16:9 [--json] [--png PATH] [--workspace DIR] [--timeout S]
    python -m agents.inspect manuscript FILE.md [--json] [--slides N|MIN-MAX] [--lang xx] [--workspace DIR]

Exit status (core.cli): 0 when the inspection ran (defects and issues are data), 1 when rendering
failed, 2 on unusable input, a slide that hangs included (one line on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from agents.manuscript import ManuscriptConstraints, inspect_manuscript
from core.cli import InputError, OneLineParser, run_command
from core.seams.steps import ManuscriptReport
from render.config import RenderConfig
from render.inspection import SlideInspection, inspect_slide
from render.renderer import Renderer, aspect_size


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return run_command(parser.prog, lambda: args.run(args))


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m agents.inspect", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(required=True, dest="command", parser_class=OneLineParser)
    slide = commands.add_parser("slide", help="render one HTML slide and measure its defects")
    slide.add_argument("file", type=Path)
    slide.add_argument("--aspect", required=True, help="16:9, 4:3, A1, A2, A3 or A4")
    slide.add_argument("--png", type=Path, help="where the PNG goes (default: beside the file)")
    slide.add_argument(
        "--workspace",
        type=Path,
        help="root that assets may come from (default: the file's folder, or its parent when that folder is slides/)",
    )
    slide.add_argument("--json", action="store_true")
    slide.add_argument(
        "--timeout", type=float, default=RenderConfig.timeout_s, help="render timeout in seconds (default %(default)g)"
    )
    slide.set_defaults(run=_run_slide)
    manuscript = commands.add_parser("manuscript", help="diagnose a markdown manuscript")
    manuscript.add_argument("file", type=Path)
    manuscript.add_argument("--slides", type=_slide_range, help="required slide count: N or MIN-MAX")
    manuscript.add_argument("--lang", help="required language code, e.g. en or zh")
    manuscript.add_argument("--workspace", type=Path, help="default: the manuscript's folder")
    manuscript.add_argument("--json", action="store_true")
    manuscript.set_defaults(run=_run_manuscript)
    return parser


def _slide_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    try:
        bounds = (int(low), int(high or low))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected N or MIN-MAX, got {text!r}") from exc
    if bounds[0] < 1 or bounds[0] > bounds[1]:
        raise argparse.ArgumentTypeError(f"empty slide range {text!r}")
    return bounds


def _run_slide(args: argparse.Namespace) -> int:
    html: Path = args.file
    try:
        aspect_size(args.aspect)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    if not html.is_file():
        raise InputError(f"{html}: no such file")
    if html.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"{html}: not an HTML file")
    workspace = (args.workspace or _default_workspace(html)).resolve()
    if not html.resolve().is_relative_to(workspace):
        raise InputError(f"{html}: outside the workspace {workspace}")
    png = (args.png or html.with_suffix(".png")).resolve()
    if args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout:g}: must be positive")
    inspection = asyncio.run(_inspect(workspace, str(html.resolve().relative_to(workspace)), args.aspect, png, args.timeout))
    if args.json:
        print(json.dumps({**inspection.to_dict(), "file": str(html)}, ensure_ascii=False))
    else:
        print(f"{html} at {args.aspect} ({inspection.width}x{inspection.height}) -> {inspection.png}")
        print(inspection.report())
    return 0


def _default_workspace(html: Path) -> Path:
    folder = html.resolve().parent
    return folder.parent if folder.name == "slides" else folder


async def _inspect(workspace: Path, html_file: str, aspect: str, png: Path, timeout_s: float) -> SlideInspection:
    async with Renderer(RenderConfig(timeout_s=timeout_s), roots=[workspace]) as renderer:
        return await inspect_slide(renderer, workspace, html_file, aspect, png_path=png)


def _run_manuscript(args: argparse.Namespace) -> int:
    low, high = args.slides or (None, None)
    constraints = ManuscriptConstraints(slides_min=low, slides_max=high, language=args.lang)
    result = inspect_manuscript(args.file, args.workspace or args.file.resolve().parent, constraints)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        print(_manuscript_report(args.file, result))
    return 0


def _manuscript_report(path: Path, result: ManuscriptReport) -> str:
    lines = [f"{path}: {result.slides} slides, language {result.language}, {len(result.issues)} issues"]
    for issue in result.issues:
        where = f"slide {issue.slide}" if issue.slide is not None else "deck"
        lines.append(f"{where}: {issue.code}: {issue.detail}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
