"""What the render tests share: the defect codes the labelled slides are named after (tests/fixtures/slides), and
a measurement (render/page/measure.js's result) with nothing in it but what a test puts there."""

from __future__ import annotations

DEFECT_CODES = (  # a defective fixture's name starts with its code
    "overflow",
    "text_clipped",
    "overlap",
    "low_contrast",
    "broken_image",
    "blank",
    "size_mismatch",
)


def bare_layout(**parts: object) -> dict[str, object]:
    """A measure.js result with nothing measured, but `parts`."""
    base: dict[str, object] = {
        "slide": [200, 100],
        "scroll": [200, 100],
        "rootClips": True,
        "clipped": [],
        "outside": [],
        "overlaps": [],
        "texts": [],
        "items": [],
        "images": [],
        "backgrounds": [],
        "frames": [],
        "visibleText": 10,
        "visibleMedia": 0,
    }
    return {**base, **parts}
