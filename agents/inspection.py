"""Environment-grounded slide inspection: defects measured in the rendered page and its pixels.

`measure.js` runs once per render and returns boxes, clipping, overlaps, text colours and
image states; `find_defects` turns that plus the screenshot into defects. Contrast and
blankness come from the pixels, so gradients and background images count as rendered.
The thresholds and severities are documented in docs/inspection.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import numpy as np

if TYPE_CHECKING:
    from agents.renderer import Renderer

MEASURE_JS = (Path(__file__).with_name("measure.js")).read_text(encoding="utf-8")

EDGE_TOLERANCE_PX = 2.0
OVERLAP_MIN_SIDE_PX = 4.0
OVERLAP_MIN_AREA_PX = 40.0
OVERLAP_MIN_SHARE = 0.02
BLANK_MAX_INK_SHARE = 0.001
DECORATIVE_OPACITY = 0.3
MAX_PER_CODE = 6
_SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2}
_SIDES = ("left", "top", "right", "bottom")
_RGBA = re.compile(
    r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)"
)


@dataclass(frozen=True)
class Defect:
    code: str  # overflow | text_clipped | overlap | low_contrast | broken_image | blank | size_mismatch
    severity: str  # critical | major | minor
    element: str  # short CSS-like selector
    detail: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.code} ({self.severity}) {self.element}: {self.detail}"


@dataclass(frozen=True)
class SlideInspection:
    file: str
    aspect: str
    width: int
    height: int
    png: Path
    defects: tuple[Defect, ...]
    seconds: float
    blocked_requests: int
    blocked: Mapping[str, str]  # url -> why the renderer refused it (agents.renderer.BLOCKED_*)

    def report(self) -> str:
        """The short text observation given to the model: one line per defect."""
        if not self.defects:
            return "No defects measured."
        return "\n".join(d.line() for d in self.defects)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "aspect": self.aspect,
            "width": self.width,
            "height": self.height,
            "png": str(self.png),
            "defects": [d.to_dict() for d in self.defects],
        }


async def inspect_slide(
    renderer: Renderer,
    workspace: Path,
    html_file: str,
    aspect: str,
    png_path: Path | None = None,
) -> SlideInspection:
    """Render `html_file` (relative to `workspace`) and measure its defects.

    The PNG goes to `png_path`, by default `<workspace>/renders/<stem>.png`.
    """
    root = workspace.resolve()
    html = (root / html_file).resolve()
    if not html.is_relative_to(root):
        raise ValueError(f"{html_file}: outside the workspace {root}")
    png = png_path or root / "renders" / f"{html.stem}.png"
    # The PDF page is printed right after (not waited for), so that exporting an unchanged slide renders nothing.
    result = await renderer.render(html, aspect, png_path=png, workspace=root, print_later=True)
    return SlideInspection(
        file=html_file,
        aspect=aspect,
        width=result.width,
        height=result.height,
        png=result.png_path,
        defects=result.defects,
        seconds=result.seconds,
        blocked_requests=result.blocked_requests,
        blocked={url: why for url, why in result.failed_requests.items() if why.startswith("blocked")},
    )


def measure_args(width: int, height: int) -> dict[str, float]:
    """The argument of MEASURE_JS for a slide of this size."""
    return {
        "width": width,
        "height": height,
        "tol": EDGE_TOLERANCE_PX,
        "minSide": OVERLAP_MIN_SIDE_PX,
    }


def find_defects(
    layout: Mapping[str, Any],
    pixels: np.ndarray,
    failures: Mapping[str, str],
    known_sizes: Iterable[tuple[int, int]],
    scale: float = 1.0,
) -> tuple[Defect, ...]:
    """All defects of one rendered slide.

    `layout` is measure.js's result, `pixels` the screenshot as an HxWx3 uint8 array,
    `failures` maps the URL of each failed or blocked request to its reason,
    `known_sizes` are slide sizes that betray a layout made for another format.
    """
    defects = [
        *_overflow(layout),
        *_text_clipped(layout),
        *_overlaps(layout),
        *_low_contrast(layout, pixels, scale),
        *_broken_images(layout, failures),
        *_blank(layout, pixels),
        *_size_mismatch(layout, known_sizes),
    ]
    return _capped(defects)


def _capped(defects: list[Defect]) -> tuple[Defect, ...]:
    """Most severe first; at most MAX_PER_CODE per code, the last one noting how many more."""
    ordered = sorted(dict.fromkeys(defects), key=lambda d: _SEVERITY_ORDER[d.severity])
    kept: list[Defect] = []
    for code in dict.fromkeys(d.code for d in ordered):
        same = [d for d in ordered if d.code == code]
        if len(same) > MAX_PER_CODE:
            last = same[MAX_PER_CODE - 1]
            more = len(same) - MAX_PER_CODE
            same = [
                *same[: MAX_PER_CODE - 1],
                Defect(
                    last.code,
                    last.severity,
                    last.element,
                    f"{last.detail} (+{more} more)",
                ),
            ]
        kept.extend(same)
    return tuple(sorted(kept, key=lambda d: _SEVERITY_ORDER[d.severity]))


def _sides(past: Iterable[float]) -> str:
    return ", ".join(
        f"{v:.0f}px past the {side}"
        for side, v in zip(_SIDES, past)
        if v > EDGE_TOLERANCE_PX
    )


def _overflow(layout: Mapping[str, Any]) -> list[Defect]:
    width, height = layout["slide"]
    defects = []
    for item in layout["outside"]:
        past = item["past"]
        worst = max(
            past[0] / width, past[2] / width, past[1] / height, past[3] / height
        )
        severity = "critical" if worst > 0.1 else "major"
        what = "text" if item["text"] else item["kind"]
        defects.append(
            Defect(
                "overflow",
                severity,
                item["el"],
                f"{what} extends {_sides(past)} edge of the {width}x{height} slide",
            )
        )
    scroll_w, scroll_h = layout["scroll"]
    scrolls = (
        scroll_w > width + EDGE_TOLERANCE_PX or scroll_h > height + EDGE_TOLERANCE_PX
    )
    if scrolls and not defects and not layout["rootClips"]:
        defects.append(
            Defect(
                "overflow",
                "major",
                "html",
                f"document is {scroll_w}x{scroll_h}px, slide is {width}x{height}px",
            )
        )
    return defects


def _text_clipped(layout: Mapping[str, Any]) -> list[Defect]:
    defects = []
    for item in layout["clipped"]:
        left, top, right, bottom = item["box"]
        hidden = item["hidden"]
        share = max(
            (hidden[0] + hidden[2]) / max(right - left, 1),
            (hidden[1] + hidden[3]) / max(bottom - top, 1),
        )
        severity = "critical" if share > 0.5 else "major"
        where = {"slide edge": "the slide edge", item["el"]: "its own box"}.get(
            item["by"], item["by"]
        )
        defects.append(
            Defect(
                "text_clipped",
                severity,
                item["el"],
                f"text cut by {where}: {_hidden(hidden)} ({share:.0%} of the text box)",
            )
        )
    return defects


def _hidden(hidden: list[float]) -> str:
    return ", ".join(
        f"{v:.0f}px hidden {side}"
        for side, v in zip(("left", "above", "right", "below"), hidden)
        if v > EDGE_TOLERANCE_PX
    )


def _overlaps(layout: Mapping[str, Any]) -> list[Defect]:
    defects = []
    for item in layout["overlaps"]:
        share = item["area"] / max(item["smaller"], 1.0)
        if item["area"] < OVERLAP_MIN_AREA_PX or share < OVERLAP_MIN_SHARE:
            continue
        both_text = all(item["text"])
        severity = (
            "critical"
            if both_text and share >= 0.1
            else "major"
            if share >= 0.1
            else "minor"
        )
        left, top, right, bottom = item["box"]
        defects.append(
            Defect(
                "overlap",
                severity,
                item["a"],
                f"overlaps {item['b']} by {right - left:.0f}x{bottom - top:.0f}px ({share:.0%} of the smaller)",
            )
        )
    return defects


def _broken_images(
    layout: Mapping[str, Any], failures: Mapping[str, str]
) -> list[Defect]:
    defects = []
    for img in layout["images"]:
        if not img["broken"]:
            continue
        reason = (
            failures.get(img["url"], "did not load") if img["src"] else "has no src"
        )
        defects.append(
            Defect(
                "broken_image",
                "critical",
                img["el"],
                f"img {img['src'] or ''} {reason}".replace("  ", " "),
            )
        )
    for bg in layout["backgrounds"]:
        for url in bg["urls"]:
            if url in failures:
                defects.append(
                    Defect(
                        "broken_image",
                        "critical",
                        bg["el"],
                        f"background-image {_short_url(url)} {failures[url]}",
                    )
                )
    return defects


def _short_url(url: str) -> str:
    if not url.startswith("file:"):
        return url[:80]
    parts = Path(unquote(urlparse(url).path)).parts
    return "/".join(parts[-2:])


def _blank(layout: Mapping[str, Any], pixels: np.ndarray) -> list[Defect]:
    sample = pixels[::6, ::6].reshape(-1, 3)
    colour, _ = _dominant(sample)
    ink = float(np.mean(np.abs(sample.astype(np.int16) - colour).max(axis=1) > 24))
    if layout["visibleText"] == 0 and layout["visibleMedia"] == 0:
        return [
            Defect(
                "blank",
                "critical",
                "body",
                f"no visible text or image ({ink:.2%} of pixels differ from {_hex(colour)})",
            )
        ]
    if ink < BLANK_MAX_INK_SHARE:
        return [
            Defect(
                "blank",
                "critical",
                "body",
                f"pixels nearly uniform: {ink:.2%} differ from {_hex(colour)}",
            )
        ]
    return []


def _size_mismatch(
    layout: Mapping[str, Any], known_sizes: Iterable[tuple[int, int]]
) -> list[Defect]:
    width, height = layout["slide"]
    others = [
        (kw, kh)
        for kw, kh in known_sizes
        if abs(kw - width) > 2 or abs(kh - height) > 2
    ]
    for frame in layout["frames"]:
        w, h = frame["size"]
        if w < 1 or h < 1:
            continue
        aspect_off = abs((w / h) / (width / height) - 1.0) > 0.03
        too_big = w > width + EDGE_TOLERANCE_PX or h > height + EDGE_TOLERANCE_PX
        other_size = any(abs(w - kw) <= 1 and abs(h - kh) <= 1 for kw, kh in others)
        if (frame["fixed"] and (aspect_off or too_big)) or other_size:
            return [
                Defect(
                    "size_mismatch",
                    "major",
                    frame["el"],
                    f"laid out as {w:.0f}x{h:.0f}px ({_ratio(w, h)}) on a {width}x{height}px ({_ratio(width, height)}) slide",
                )
            ]
    return []


def _ratio(w: float, h: float) -> str:
    for name, value in (
        ("16:9", 16 / 9),
        ("4:3", 4 / 3),
        ("16:10", 16 / 10),
        ("1:\u221a2", 2**-0.5),
        ("\u221a2:1", 2**0.5),
    ):
        if abs(w / h / value - 1) < 0.02:
            return name
    return f"{w / h:.2f}:1"


def _low_contrast(
    layout: Mapping[str, Any], pixels: np.ndarray, scale: float
) -> list[Defect]:
    defects = []
    for run in layout["texts"]:
        colour = _parse_rgba(run["color"])
        fill = _parse_rgba(run["fill"]) if run["fill"] else colour
        if (
            colour is None
            or fill is None
            or fill[3] == 0
            or not run["letters"]
            or run["shadow"]
            or run["blend"]
        ):
            continue
        alpha = colour[3] * run["opacity"]
        if alpha <= DECORATIVE_OPACITY:
            continue
        region = _region(pixels, run["rects"], scale)
        if region.size == 0:
            continue
        text_rgb = np.array(colour[:3], dtype=np.float64)
        background = _background(region, text_rgb)
        seen = alpha * text_rgb + (1 - alpha) * background
        ratio = contrast_ratio(seen, background)
        large = run["size"] >= 24 or (run["size"] >= 18.66 and run["weight"] >= 700)
        needed = 3.0 if large else 4.5
        if ratio >= needed:
            continue
        severity = "critical" if ratio < 2.0 else "major" if ratio < 3.0 else "minor"
        defects.append(
            Defect(
                "low_contrast",
                severity,
                run["el"],
                f"contrast {ratio:.2f}:1 < {needed}:1 (text {_hex(seen)} on {_hex(background)}, {run['size']:.0f}px)",
            )
        )
    return defects


def _region(
    pixels: np.ndarray, rects: list[list[float]], scale: float, limit: int = 20_000
) -> np.ndarray:
    """The pixels under the text boxes, subsampled to at most about `limit`."""
    height, width = pixels.shape[:2]
    parts = []
    for left, top, right, bottom in rects:
        x0, y0 = max(int(left * scale), 0), max(int(top * scale), 0)
        x1, y1 = (
            min(int(np.ceil(right * scale)), width),
            min(int(np.ceil(bottom * scale)), height),
        )
        if x1 > x0 and y1 > y0:
            parts.append(pixels[y0:y1, x0:x1].reshape(-1, 3))
    if not parts:
        return np.empty((0, 3), dtype=np.uint8)
    region = np.concatenate(parts)
    step = max(1, len(region) // limit)
    return region[::step]


def _dominant(pixels: np.ndarray, top: int = 1) -> tuple[np.ndarray, float]:
    """Mean colour and share of the most frequent 4-bit-per-channel colour bin."""
    bins = _bins(pixels)
    counts = np.bincount(bins, minlength=4096)
    best = int(np.argmax(counts))
    return pixels[bins == best].mean(axis=0), counts[best] / len(pixels)


def _bins(pixels: np.ndarray) -> np.ndarray:
    q = (pixels >> 4).astype(np.int32)
    return q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]


def _background(region: np.ndarray, text_rgb: np.ndarray) -> np.ndarray:
    """The colour behind the text: the most common colour bin, unless that bin is the glyphs
    themselves (heavy text) and another bin with a real share differs from the text."""
    bins = _bins(region)
    counts = np.bincount(bins, minlength=4096)
    top = np.argpartition(counts, -3)[-3:]
    order = top[np.argsort(counts[top])[::-1]]
    candidates = [
        (region[bins == b].mean(axis=0), counts[b] / len(region))
        for b in order
        if counts[b]
    ]
    first = candidates[0][0]
    if np.abs(first - text_rgb).max() > 40:
        return first
    for colour, share in candidates[1:]:
        if share >= 0.15 and np.abs(colour - text_rgb).max() > 40:
            return colour
    return first


def relative_luminance(rgb: np.ndarray) -> float:
    """WCAG 2.x relative luminance of an sRGB colour given as 0-255 floats."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(a: np.ndarray, b: np.ndarray) -> float:
    la, lb = relative_luminance(a), relative_luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _parse_rgba(css: str) -> tuple[float, float, float, float] | None:
    match = _RGBA.fullmatch(css.strip())
    if not match:
        return None
    r, g, b, a = match.groups()
    alpha = 1.0 if a is None else float(a[:-1]) / 100 if a.endswith("%") else float(a)
    return float(r), float(g), float(b), alpha


def _hex(rgb: np.ndarray) -> str:
    r, g, b = (round(float(v)) for v in rgb[:3])
    return f"#{r:02x}{g:02x}{b:02x}"
