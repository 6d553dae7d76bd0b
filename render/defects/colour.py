"""Colour arithmetic on screenshot pixels: WCAG contrast, colour bins, the colour behind text."""

from __future__ import annotations

import re

import numpy as np

_RUN_SLACK = 0.75  # coverage a run across a line may lose to anti-aliasing: up to 0.5 a line thick enough, 1 one pixel thinner
_GLYPH_BIN = 12  # a colour bin's mean lies this close to the colour of the glyphs it holds
_RGBA = re.compile(r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)")


def relative_luminance(rgb: np.ndarray) -> float:
    """WCAG 2.x relative luminance of an sRGB colour given as 0-255 floats."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(a: np.ndarray, b: np.ndarray) -> float:
    la, lb = relative_luminance(a), relative_luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def parse_rgba(css: str) -> tuple[float, float, float, float] | None:
    match = _RGBA.fullmatch(css.strip())
    if not match:
        return None
    r, g, b, a = match.groups()
    alpha = 1.0 if a is None else float(a[:-1]) / 100 if a.endswith("%") else float(a)
    return float(r), float(g), float(b), alpha


def to_hex(rgb: np.ndarray) -> str:
    r, g, b = (round(float(v)) for v in rgb[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def crop(pixels: np.ndarray, rect: list[float], scale: float) -> np.ndarray:
    """The pixels under one rectangle (CSS px), as an image (empty where it lies outside)."""
    height, width = pixels.shape[:2]
    left, top, right, bottom = rect
    x0, y0 = max(int(left * scale), 0), max(int(top * scale), 0)
    x1 = min(int(np.ceil(right * scale)), width)
    y1 = min(int(np.ceil(bottom * scale)), height)
    return pixels[y0 : max(y0, y1), x0 : max(x0, x1)]


def region(pixels: np.ndarray, rects: list[list[float]], scale: float, limit: int = 20_000) -> np.ndarray:
    """The pixels under the rectangles (CSS px), subsampled to at most about `limit`."""
    parts = [found.reshape(-1, 3) for found in (crop(pixels, rect, scale) for rect in rects) if found.size]
    if not parts:
        return np.empty((0, 3), dtype=np.uint8)
    found = np.concatenate(parts)
    return found[:: max(1, len(found) // limit)]


def dominant(pixels: np.ndarray) -> tuple[np.ndarray, float]:
    """Mean colour and share of the most frequent 4-bit-per-channel colour bin."""
    bins = _bins(pixels)
    counts = np.bincount(bins, minlength=4096)
    best = int(np.argmax(counts))
    return pixels[bins == best].mean(axis=0), counts[best] / len(pixels)


def solid_marks(image: np.ndarray, side: int, delta: float) -> int:
    """How many pixels of `image` (HxWx3) lie in marks at least `side` pixels thick, down and across:
    bars and thick lines at any slope, not thin lines (gridlines, rules) nor text strokes.

    A mark differs from the image's most frequent colour (its ground) by more than `delta`. An
    anti-aliased pixel is a blend of ground and mark, so its distance from the ground is the share of
    it the mark covers: a run of `side` pixels is full when the shares add up to `side` less the
    slack its two edges may lose (`_RUN_SLACK`), which a line one pixel thinner never reaches."""
    if min(image.shape[:2]) < side:
        return 0
    ground, _ = dominant(image.reshape(-1, 3))
    far = np.sqrt(np.square(image.astype(np.float32) - ground.astype(np.float32)).sum(axis=2))
    return int(np.count_nonzero(_in_runs(far, side, delta, 0) & _in_runs(far, side, delta, 1)))


def _in_runs(far: np.ndarray, side: int, delta: float, axis: int) -> np.ndarray:
    """Pixels in a full run of `side` marks along `axis` (see `solid_marks`)."""
    length = far.shape[axis] - side + 1
    runs = [np.take(far, range(i, i + length), axis=axis) for i in range(side)]
    core = np.maximum.reduce(runs)
    starts = (core > delta) & (np.add.reduce(runs) >= (side - _RUN_SLACK) * core)
    covered = np.zeros(far.shape, dtype=bool)
    for i in range(side):
        index = [slice(None), slice(None)]
        index[axis] = slice(i, i + length)
        covered[tuple(index)] |= starts
    return covered


def _bins(pixels: np.ndarray) -> np.ndarray:
    q = (pixels >> 4).astype(np.int32)
    return q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]


def background(found: np.ndarray, text_rgb: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """The colour behind the text: the most common colour bin, unless that bin is the glyphs
    themselves (heavy text: the text's colour at its opacity over another common colour); then the
    next common colour, or for a detailed backdrop without one (a photo) its median-luminance pixel.
    A pale text close to its background is not taken for the glyphs: its bins differ."""
    bins = _bins(found)
    counts = np.bincount(bins, minlength=4096)
    top = np.argpartition(counts, -3)[-3:]
    order = top[np.argsort(counts[top])[::-1]]
    # Per-channel sums of every bin in one pass each: half the time of a mask per bin.
    sums = np.stack([np.bincount(bins, weights=found[:, c], minlength=4096) for c in range(3)], axis=1)
    candidates = [(sums[b] / counts[b], counts[b] / len(found)) for b in order if counts[b]]

    def glyphs(colour: np.ndarray) -> bool:
        drawn = [alpha * text_rgb + (1 - alpha) * other for other, _ in candidates if other is not colour]
        if alpha >= 0.95:
            drawn.append(text_rgb)
        return any(np.abs(colour - d).max() <= _GLYPH_BIN for d in drawn)

    first = candidates[0][0]
    if not glyphs(first):
        return first
    for colour, share in candidates[1:]:
        if share >= 0.15 and not glyphs(colour):
            return colour
    far = found[np.abs(found - text_rgb).max(axis=1) > 80]
    if len(far) == 0:
        return first
    luminance = far @ np.array([0.2126, 0.7152, 0.0722])
    return far[np.argsort(luminance)[len(far) // 2]].astype(np.float64)


def plain_share(found: np.ndarray, text_rgb: np.ndarray) -> float:
    """Share of the pixels around text that are its plain backdrop: the dominant colour, the glyphs,
    or a blend of the two (anti-aliased edges). A detailed image under the text scores low."""
    ground = background(found, text_rgb)
    span = ground - text_rgb
    pix = found.astype(np.float64)
    t = np.clip((pix - text_rgb) @ span / max(float(span @ span), 1.0), 0.0, 1.0)
    distance = np.linalg.norm(pix - (text_rgb + t[:, None] * span), axis=1)
    return float(np.mean(distance <= 24))
