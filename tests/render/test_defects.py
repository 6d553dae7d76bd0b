"""The judgement in render/defects/ on hand-made measurements (the rendered cases are in
test_inspection.py and test_inspection_review.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from render.defects.colour import background, solid_marks
from render.inspection import find_defects
from render.renderer import KNOWN_SIZES
from tests.render.helpers import bare_layout

WHITE = np.full((100, 200, 3), 255, dtype=np.uint8)


def _item(kind: str, **signals: Any) -> dict[str, Any]:
    base = {
        "el": kind,
        "kind": kind,
        "opacity": 1.0,
        "marked": False,
        "pointer": False,
        "behind": False,
        "full": False,
        "fills": False,
        "shapes": 0,
        "svgText": False,
        "side": 100.0,
        "size": 20.0,
        "chars": 30,
        "color": "rgb(0, 0, 0)",
    }
    return {**base, **signals}


def _run(color: str, rect: list[float], item: int, **signals: Any) -> dict[str, Any]:
    base = {
        "el": f"p{item}",
        "rects": [rect],
        "color": color,
        "opacity": 1.0,
        "size": 20,
        "weight": 400,
        "chars": 30,
        "letters": True,
        "fill": color,
        "shadow": False,
        "blend": False,
        "item": item,
    }
    return {**base, **signals}


def _pixels() -> np.ndarray:
    pixels = WHITE.copy()
    pixels[0:3, 0:3] = 0  # not blank
    return pixels


def _codes(layout: dict[str, object], pixels: np.ndarray | None = None) -> list[str]:
    return [d.code for d in find_defects(layout, _pixels() if pixels is None else pixels, {}, KNOWN_SIZES)]


def test_faint_text_is_content_but_a_ghost_watermark_is_not() -> None:
    pixels = _pixels()
    pixels[10:20, 10:150] = 180  # the faint presenter line as rendered
    layout = bare_layout(
        items=[_item("text"), _item("text", size=200.0, chars=4), _item("text", chars=300)],
        texts=[
            _run("rgb(0, 0, 0)", [10, 10, 150, 20], 0, opacity=0.3),
            _run("rgb(245, 245, 245)", [0, 30, 200, 100], 1, size=200, chars=4),
            _run("rgb(20, 20, 20)", [10, 80, 60, 90], 2, chars=300),
        ],
    )
    defects = find_defects(layout, pixels, {}, KNOWN_SIZES)
    assert [d.element for d in defects] == ["p0"]
    assert "opacity 0.30" in defects[0].detail and "content:" in defects[0].detail


def test_the_background_of_pale_text_is_not_taken_for_its_glyphs() -> None:
    found = np.concatenate([np.full((700, 3), 248), np.full((300, 3), 232)]).astype(np.uint8)
    assert background(found, np.array([232.0, 232.0, 232.0])).tolist() == [248, 248, 248]
    heavy = np.concatenate([np.full((700, 3), 20), np.full((300, 3), 255)]).astype(np.uint8)
    assert background(heavy, np.array([20.0, 20.0, 20.0])).tolist() == [255, 255, 255]


def _outside(item: int, kind: str) -> dict[str, Any]:
    return {"el": kind, "item": item, "kind": kind, "box": [150, 0, 230, 80], "past": [0, 0, 30, 0], "text": False}


def test_decoration_bleeding_off_the_edge_is_no_overflow() -> None:
    items = [
        _item("svg", shapes=1, side=300.0),  # a large plain blob
        _item("svg", shapes=1, side=40.0),  # an icon
        _item("svg", shapes=1, side=300.0, svgText=True, opacity=0.2),  # a faint chart is still read
        _item("img", marked=True),  # alt=""
        _item("img"),
    ]
    layout = bare_layout(items=items, outside=[_outside(i, it["kind"]) for i, it in enumerate(items)])
    defects = find_defects(layout, _pixels(), {}, KNOWN_SIZES)
    assert [(d.code, d.detail.split("content: ")[1]) for d in defects] == [
        ("overflow", "an svg of 1 shapes, 40px: an icon, not a large plain shape)"),
        ("overflow", "a drawing with text and 1 shapes)"),
        ("overflow", "an image not marked decorative)"),
    ]


def _pair(a: int, b: int, **probe: Any) -> dict[str, Any]:
    base = {
        "a": a,
        "b": b,
        "area": 400.0,
        "smaller": 1000.0,
        "box": [10, 10, 50, 20],
        "fills": False,
        "inside": [1.0, 0.1],
        "n": 6,
        "aTop": True,
        "topInk": 6,
        "backdrop": 0,
        "shapes": 0,
        "under": {"text": 0, "shape": 0, "thin": 0, "none": 0, "box": 0},
        "cover": None,
        "chart": None,
    }
    return {**base, **probe}


def test_an_overlap_is_a_defect_only_where_content_is_hidden() -> None:
    items = [_item("text"), _item("svg", shapes=12, svgText=True), _item("img")]

    def under(**hits: int) -> dict[str, int]:
        return {"text": 0, "shape": 0, "thin": 0, "none": 0, "box": 0, **hits}

    cases = {
        "legend over gridlines": (_pair(0, 1, under=under(thin=2, none=4)), []),
        "legend over bars": (_pair(0, 1, shapes=2, under=under(shape=4, none=2)), ["overlap"]),
        "label inside a bar": (_pair(0, 1, shapes=1, under=under(shape=6)), []),
        "svg over text, empty there": (_pair(0, 1, aTop=False, topInk=0), []),
        "caption on a scrim": (_pair(0, 2, backdrop=6, under=under(box=6)), []),
        "image over text": (_pair(0, 2, aTop=False), ["overlap"]),
        "text on text": (_pair(0, 0, n=0), ["overlap"]),
    }
    for name, (pair, expected) in cases.items():
        assert _codes(bare_layout(items=items, overlaps=[pair])) == expected, name


def test_a_caption_on_a_plain_part_of_an_image_hides_nothing() -> None:
    items = [_item("text", color="rgb(255, 255, 255)"), _item("img")]
    pair = _pair(0, 1, under={"text": 0, "shape": 0, "thin": 0, "none": 0, "box": 6})
    plain = _pixels()
    plain[10:20, 10:50] = (70, 120, 200)  # sky
    plain[12:18, 12:48:3] = 255  # glyph strokes
    assert _codes(bare_layout(items=items, overlaps=[pair]), plain) == []
    busy = plain.copy()
    busy[10:20, 10:50] = np.random.default_rng(1).integers(0, 256, (10, 40, 3), dtype=np.uint8)
    assert _codes(bare_layout(items=items, overlaps=[pair]), busy) == ["overlap"]
    straddling = {**pair, "inside": [0.6, 0.1]}
    assert _codes(bare_layout(items=items, overlaps=[straddling]), plain) == ["overlap"]


def test_a_text_box_over_a_chart_is_judged_by_the_chart_beneath_it() -> None:
    """The box's backing hid what the hit-tests could see: the chart's own pixels under it decide."""
    items = [_item("text"), _item("img"), _item("svg", shapes=12, svgText=True)]
    cover = {"cover": [20, 20, 120, 60], "chart": [0, 0, 200, 100]}
    on_img = _pair(0, 1, fills=True, under={"text": 0, "shape": 0, "thin": 0, "none": 0, "box": 6}, **cover)
    on_svg = _pair(0, 2, under={"text": 0, "shape": 0, "thin": 1, "none": 5, "box": 0}, **cover)
    bars, grid, line = _pixels(), _pixels(), _pixels()
    bars[40:100, 50:80] = (21, 112, 239)
    grid[30, :] = (152, 162, 179)  # a 1 px gridline
    line[44:47, :] = (220, 104, 3)  # a 3 px series line
    photo = _pixels()
    photo[:] = np.random.default_rng(2).integers(0, 256, photo.shape, dtype=np.uint8)

    def codes(pair: dict[str, Any], beneath: np.ndarray | None, pixels: np.ndarray | None = None) -> list[str]:
        layout = bare_layout(items=items, overlaps=[pair])
        return [d.code for d in find_defects(layout, _pixels() if pixels is None else pixels, {}, KNOWN_SIZES, beneath=beneath)]

    for pair in (on_img, on_svg):
        assert codes(pair, bars) == codes(pair, line) == ["overlap"], pair
        assert codes(pair, grid) == codes(pair, _pixels()) == codes(pair, None) == [], pair
        assert codes(pair, bars, photo) == [], pair  # no plain ground: a photo, judged by the picture rules
    detail = find_defects(bare_layout(items=items, overlaps=[on_img]), _pixels(), {}, KNOWN_SIZES, beneath=bars)[0].detail
    assert "covers the img's bars or lines (" in detail and "content: an image" in detail


def test_only_marks_3px_thick_count_whatever_their_offset_or_slope() -> None:
    def drawn(coverage: list[float], turn: bool = False) -> np.ndarray:
        image = np.full((40, 120, 3), 255.0)
        for row, share in enumerate(coverage):
            image[10 + row] = 255 - share * (255 - np.array([21.0, 112.0, 239.0]))
        return np.rint(image).astype(np.uint8).transpose(1, 0, 2) if turn else np.rint(image).astype(np.uint8)

    thin = {"1 px across two rows": [0.5, 0.5], "2 px": [1, 1], "2 px off the grid": [0.5, 1, 0.5]}
    thick = {"3 px": [1, 1, 1], "3 px off the grid": [0.5, 1, 1, 0.5], "3 px a quarter off": [0.75, 1, 1, 0.25]}
    for turn in (False, True):
        assert all(solid_marks(drawn(c, turn), 3, 48.0) == 0 for c in thin.values()), turn
        assert all(solid_marks(drawn(c, turn), 3, 48.0) >= 100 for c in thick.values()), turn
    slope = np.full((60, 120, 3), 255, dtype=np.uint8)
    for x in range(120):
        top = 10 + x * 0.3
        slope[int(top) : int(top) + 4, x] = (21, 112, 239)
    assert solid_marks(slope, 3, 48.0) >= 100


def test_the_slide_box_is_judged_by_its_computed_size() -> None:
    def frame(size: list[float], sized: bool = True, outside: list[int] | None = None) -> dict[str, Any]:
        return {"el": "div.slide", "size": size, "sized": sized, "outside": outside or []}

    items = [_item("text"), _item("img"), _item("svg", shapes=1, side=300.0)]
    cases = {
        "4:3 box on a 16:9 slide": (frame([133, 100]), ["size_mismatch"]),
        "taller than the slide": (frame([178, 120]), ["size_mismatch"]),
        "height left to the content": (frame([133, 100], sized=False), []),
        "a 4:3 column beside a picture": (frame([133, 100], outside=[1]), []),
        "a 4:3 box beside a blob": (frame([133, 100], outside=[2]), ["size_mismatch"]),
        "a panel of no page shape": (frame([170, 80]), []),
    }
    for name, (box, expected) in cases.items():
        layout = bare_layout(slide=[178, 100], scroll=[178, 100], items=items, frames=[box])
        assert _codes(layout) == expected, name
