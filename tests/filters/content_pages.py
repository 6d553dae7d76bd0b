"""HTML slides of the content gate's page decks (content_decks/pages.yaml), laid out as a generated deck is.

A slide is a mapping whose keys are laid out in their order: `title` (the h1; the first slide's is a
title slide), `subtitle`, `bullets` (a list), `text` (paragraphs), `chart` (an inline SVG bar or
line chart: kind, labels, values, ticks, and a caption), `table` (rows, the first its header),
`code`, `math` (MathML inside <math display="block">), `diagram` (labels of boxes joined by
arrows), `image` (a raster picture), `html` (as it is), `row` (slides laid side by side);
`divider` makes a section divider (its heading alone, centred). The deck's `furniture` puts a
`footer`, a `header` (a <header> band holding the h1 and a brand name) and a page `number`
("{n}", "{n} / {total}", "第 {n} 页") on every slide but the first.
"""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any, Callable, Mapping

from PIL import Image

WIDTH, HEIGHT = 1280, 720
PICTURE = "picture.png"

CSS = """
* { box-sizing: border-box; margin: 0; padding: 0; }
html, body { width: 1280px; height: 720px; overflow: hidden; }
body { font-family: "Noto Sans", "Noto Sans CJK SC", sans-serif; color: #1e293b; background: #ffffff; position: relative; }
main { padding: 48px 80px 0; }
header { display: flex; justify-content: space-between; align-items: baseline; padding: 40px 80px 0; }
header .brand { font-size: 15px; letter-spacing: 2px; color: #64748b; }
h1 { font-size: 40px; margin-bottom: 26px; color: #0f172a; }
.title-slide { height: 720px; display: flex; flex-direction: column; justify-content: center; padding: 0 110px; }
.title-slide h1 { font-size: 58px; }
.divider { height: 720px; display: flex; align-items: center; justify-content: center; background: #1e3a8a; }
.divider h1 { font-size: 54px; color: #ffffff; }
.subtitle { font-size: 26px; color: #475569; }
ul { padding-left: 30px; }
li, p { font-size: 23px; line-height: 1.45; margin-bottom: 12px; }
.row { display: flex; gap: 48px; align-items: flex-start; }
.row > div { flex: 1; }
table { border-collapse: collapse; font-size: 20px; margin-bottom: 16px; }
th, td { border-bottom: 1px solid #cbd5e1; padding: 8px 18px; text-align: left; }
th { background: #f1f5f9; }
pre { font-family: "DejaVu Sans Mono", monospace; font-size: 17px; line-height: 1.45; background: #f1f5f9; padding: 16px 20px; border-radius: 8px; margin-bottom: 14px; }
math { font-size: 30px; margin: 12px 0 20px; }
figcaption { font-size: 16px; color: #475569; }
img { width: 360px; height: 200px; }
footer { position: absolute; left: 80px; right: 80px; bottom: 22px; display: flex; justify-content: space-between; font-size: 14px; color: #64748b; }
"""

_FONT = 'font-family="Noto Sans, Noto Sans CJK SC, sans-serif"'


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def picture_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (360, 200), (40, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def _chart(spec: Mapping[str, Any]) -> str:
    """A bar or line chart: y-axis ticks, a label under each bar or point, optional value labels."""
    w, h, left, bottom, top = 540, 320, 64, 44, 16
    low, high = float(spec["ticks"][0]), float(spec["ticks"][-1])
    step = (w - left - 16) / len(spec["labels"])

    def y(value: float) -> float:
        return top + (h - top - bottom) * (1 - (float(value) - low) / (high - low))

    def x(i: int) -> float:
        return left + step * (i + 0.5)

    parts = [f'<line x1="{left}" y1="{y(low)}" x2="{w - 8}" y2="{y(low)}" stroke="#334155"/>']
    for tick in spec["ticks"]:  # written as given: "0.00", "25"
        parts.append(f'<line x1="{left}" y1="{y(tick)}" x2="{w - 8}" y2="{y(tick)}" stroke="#e2e8f0"/>')
        parts.append(f'<text x="{left - 8}" y="{y(tick) + 5}" text-anchor="end" font-size="14" {_FONT}>{_e(tick)}</text>')
    values = spec["values"]
    if spec.get("kind", "bar") == "line":
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        parts.append(f'<polyline points="{points}" fill="none" stroke="#2563eb" stroke-width="3"/>')
        parts += [f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="5" fill="#2563eb"/>' for i, v in enumerate(values)]
    else:
        parts += [
            f'<rect x="{x(i) - step * 0.3:.1f}" y="{y(v):.1f}" width="{step * 0.6:.1f}" height="{y(low) - y(v):.1f}" fill="#3b82f6"/>'
            for i, v in enumerate(values)
        ]
    if spec.get("value_labels"):
        parts += [
            f'<text x="{x(i):.1f}" y="{y(v) - 8:.1f}" text-anchor="middle" font-size="13" {_FONT}>{_e(v)}</text>'
            for i, v in enumerate(values)
        ]
    parts += [
        f'<text x="{x(i):.1f}" y="{y(low) + 24}" text-anchor="middle" font-size="15" {_FONT}>{_e(label)}</text>'
        for i, label in enumerate(spec["labels"])
    ]
    caption = f"<figcaption>{_e(spec['caption'])}</figcaption>" if spec.get("caption") else ""
    return f'<figure><svg width="{w}" height="{h}" viewBox="0 0 {w} {h}">{"".join(parts)}</svg>{caption}</figure>'


def _diagram(labels: list[str]) -> str:
    """Boxes joined left to right by arrows, a short label in each."""
    box, gap, h = 190, 56, 84
    w = len(labels) * box + (len(labels) - 1) * gap
    parts = [
        '<defs><marker id="head" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
        '<path d="M0,0 L10,4 L0,8 z" fill="#334155"/></marker></defs>'
    ]
    for i, label in enumerate(labels):
        left = i * (box + gap)
        parts.append(f'<rect x="{left + 1}" y="1" width="{box - 2}" height="{h - 2}" rx="12" fill="#dbeafe" stroke="#2563eb"/>')
        parts.append(f'<text x="{left + box / 2}" y="{h / 2 + 7}" text-anchor="middle" font-size="19" {_FONT}>{_e(label)}</text>')
        if i:
            parts.append(
                f'<line x1="{left - gap + 4}" y1="{h / 2}" x2="{left - 6}" y2="{h / 2}" stroke="#334155" stroke-width="2" marker-end="url(#head)"/>'
            )
    return f'<svg class="diagram" width="{w}" height="{h}" viewBox="0 0 {w} {h}">{"".join(parts)}</svg>'


def _table(rows: list[list[object]]) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _paragraphs(text: str | list[str]) -> str:
    return "".join(f"<p>{_e(t)}</p>" for t in ([text] if isinstance(text, str) else text))


PARTS: dict[str, Callable[[Any], str]] = {
    "title": lambda text: f"<h1>{_e(text)}</h1>",
    "subtitle": lambda text: f'<p class="subtitle">{_e(text)}</p>',
    "bullets": lambda items: "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>",
    "text": _paragraphs,
    "chart": _chart,
    "table": _table,
    "code": lambda code: f"<pre><code>{_e(code.rstrip())}</code></pre>",
    "math": lambda mathml: f'<math display="block">{mathml}</math>',
    "diagram": _diagram,
    "image": lambda _: f'<img src="../{PICTURE}" alt="">',
    "html": lambda raw: raw,
    "row": lambda columns: '<div class="row">' + "".join(f"<div>{_body(c)}</div>" for c in columns) + "</div>",
}


def _body(slide: Mapping[str, Any]) -> str:
    unknown = set(slide) - set(PARTS) - {"divider"}
    if unknown:
        raise ValueError(f"unknown slide parts {sorted(unknown)}")
    return "".join(PARTS[key](value) for key, value in slide.items())


def slide_html(slide: Mapping[str, Any], number: int, total: int, lang: str, furniture: Mapping[str, str]) -> str:
    if "divider" in slide:
        content = f'<section class="divider"><h1>{_e(slide["divider"])}</h1></section>'
    elif number == 1:
        content = f'<section class="title-slide">{_body(slide)}</section>'
    elif "header" in furniture:
        rest = {k: v for k, v in slide.items() if k != "title"}
        brand = f'<span class="brand">{_e(furniture["header"])}</span>'
        content = f"<header>{PARTS['title'](slide.get('title', ''))}{brand}</header><main>{_body(rest)}</main>"
    else:
        content = f"<main>{_body(slide)}</main>"
    if number > 1 and ("footer" in furniture or "number" in furniture):
        page = furniture.get("number", "").format(n=number, total=total)
        content += f"<footer><span>{_e(furniture.get('footer', ''))}</span><span>{_e(page)}</span></footer>"
    return (
        f'<!doctype html>\n<html lang="{lang}"><head><meta charset="utf-8"><style>{CSS}</style></head>\n'
        f"<body>{content}</body></html>\n"
    )


def write_slides(slides: list[Mapping[str, Any]], lang: str, furniture: Mapping[str, str], workspace: Path) -> Path:
    """workspace/slides/slide_NN.html and the picture they may show; returns the slides folder."""
    folder = workspace / "slides"
    folder.mkdir(parents=True, exist_ok=True)
    (workspace / PICTURE).write_bytes(picture_png())
    for number, slide in enumerate(slides, start=1):
        (folder / f"slide_{number:02d}.html").write_text(
            slide_html(slide, number, len(slides), lang, furniture), encoding="utf-8"
        )
    return folder
