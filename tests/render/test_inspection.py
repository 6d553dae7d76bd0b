from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from render.defects.colour import contrast_ratio
from render.inspection import Defect, SlideInspection, find_defects, inspect_slide
from render.renderer import KNOWN_SIZES, Renderer, RenderResult, aspect_size
from tests.render.helpers import DEFECT_CODES, bare_layout
from tests.rendered import FIXTURES, SLIDES, fixture_aspect, session_loop

CLEAN = sorted(p.name for p in SLIDES.glob("clean_*.html"))
DEFECTIVE = sorted(p.name for p in SLIDES.glob("*.html") if p.name.startswith(DEFECT_CODES))


def _expected_code(name: str) -> str:
    return next(code for code in DEFECT_CODES if name.startswith(code + "_"))


def test_fixture_set_covers_every_defect_and_both_languages() -> None:
    assert len(CLEAN) >= 12
    assert any(n.endswith("_zh.html") for n in CLEAN) and any(n.endswith("_en.html") for n in CLEAN)
    for code in DEFECT_CODES:
        assert 2 <= sum(_expected_code(n) == code for n in DEFECTIVE) <= 3, code


@pytest.mark.chromium
@session_loop
@pytest.mark.parametrize("name", CLEAN)
async def test_clean_fixture_has_no_defects(name: str, fixture_results: dict[str, RenderResult]) -> None:
    result = fixture_results[name]
    assert result.defects == (), [d.line() for d in result.defects]
    assert result.blocked_requests == 0
    assert not result.failed_requests


@pytest.mark.chromium
@session_loop
@pytest.mark.parametrize("name", DEFECTIVE)
async def test_defect_fixture_is_detected(name: str, fixture_results: dict[str, RenderResult]) -> None:
    defects = fixture_results[name].defects
    code = _expected_code(name)
    assert code in {d.code for d in defects}, [d.line() for d in defects]
    for d in defects:
        assert d.severity in ("critical", "major", "minor") and d.element and d.detail
        if d.code != "broken_image":
            assert any(ch.isdigit() for ch in d.detail), d.line()  # measured, with numbers


@pytest.mark.chromium
@session_loop
async def test_every_png_has_the_slide_size(
    fixture_results: dict[str, RenderResult],
) -> None:
    """Concurrent renders at mixed sizes: each capture matches its own page's viewport."""
    for name, result in fixture_results.items():
        assert Image.open(result.png_path).size == aspect_size(fixture_aspect(SLIDES / name)), name


@pytest.mark.chromium
@session_loop
async def test_details_carry_the_measured_numbers(
    fixture_results: dict[str, RenderResult],
) -> None:
    overflow = fixture_results["overflow_2_image_en.html"].defects
    assert any(d.code == "overflow" and d.element == "img" and "200px past the right" in d.detail for d in overflow)
    mismatch = fixture_results["size_mismatch_1_body43_en.html"].defects
    assert any(d.element == "body" and "960x720" in d.detail and "1280x720" in d.detail for d in mismatch)
    contrast = [d for d in fixture_results["low_contrast_1_grey_en.html"].defects if d.code == "low_contrast"]
    assert contrast and contrast[0].element == "p.faint" and "< 4.5:1" in contrast[0].detail
    broken = fixture_results["broken_image_3_external_zh.html"].defects
    assert any("external URL" in d.detail for d in broken)
    assert fixture_results["broken_image_3_external_zh.html"].blocked_requests == 1


@pytest.mark.chromium
@session_loop
async def test_inspect_slide_reports(renderer: Renderer, tmp_path: Path) -> None:
    png = tmp_path / "overlap.png"
    inspection = await inspect_slide(renderer, FIXTURES, "slides/overlap_1_title_en.html", "16:9", png_path=png)
    assert isinstance(inspection, SlideInspection)
    assert (inspection.width, inspection.height) == (1280, 720)
    assert inspection.png == png and png.stat().st_size > 1000
    assert inspection.report().startswith("overlap (critical) h2: overlaps p by ")
    assert inspection.to_dict()["defects"][0]["code"] == "overlap"

    clean = await inspect_slide(
        renderer,
        FIXTURES,
        "slides/clean_title_en.html",
        "16:9",
        png_path=tmp_path / "c.png",
    )
    assert clean.report() == "No defects measured."


@pytest.mark.chromium
@session_loop
async def test_inspect_slide_default_png_goes_to_renders(renderer: Renderer, tmp_path: Path) -> None:
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "slide_01.html").write_text((SLIDES / "clean_title_en.html").read_text(), encoding="utf-8")
    inspection = await inspect_slide(renderer, tmp_path, "slides/slide_01.html", "16:9")
    assert inspection.png == tmp_path.resolve() / "renders" / "slide_01.png"
    assert inspection.png.is_file()


@session_loop
async def test_inspect_slide_refuses_files_outside_the_workspace(
    renderer: Renderer,
) -> None:
    with pytest.raises(ValueError, match="outside the workspace"):
        await inspect_slide(renderer, SLIDES, "../../conftest.py", "16:9")


def test_contrast_ratio_matches_wcag() -> None:
    assert contrast_ratio(np.array([0, 0, 0]), np.array([255, 255, 255])) == pytest.approx(21.0)
    assert contrast_ratio(np.array([119, 119, 119]), np.array([255, 255, 255])) == pytest.approx(4.48, abs=0.01)


def _text_run(color: str, rects: list[list[float]], size: float = 20) -> dict[str, object]:
    return {
        "el": "p",
        "rects": rects,
        "color": color,
        "opacity": 1.0,
        "size": size,
        "weight": 400,
        "chars": 10,
        "letters": True,
        "fill": color,
        "shadow": False,
        "blend": False,
        "item": -1,
    }


def test_contrast_uses_the_pixels_behind_heavy_text() -> None:
    """Glyphs covering most of the box must not be taken for the background."""
    pixels = np.full((100, 200, 3), 255, dtype=np.uint8)
    pixels[10:30, 10:190] = 20  # a dark bar (the heavy glyphs) on white
    pixels[10:30, 150:190] = 255
    layout = bare_layout(texts=[_text_run("rgb(20, 20, 20)", [[10, 5, 190, 35]])])
    assert find_defects(layout, pixels, {}, KNOWN_SIZES) == ()


def test_contrast_flags_text_on_a_similar_background() -> None:
    pixels = np.full((100, 200, 3), 200, dtype=np.uint8)
    pixels[0:5, 0:5] = 0  # not blank
    layout = bare_layout(texts=[_text_run("rgba(210, 210, 210, 1)", [[10, 10, 150, 40]])])
    defects = find_defects(layout, pixels, {}, KNOWN_SIZES)
    assert [d.code for d in defects] == ["low_contrast"]
    assert defects[0].severity == "critical" and "1.1" in defects[0].detail


def test_defects_are_capped_per_code() -> None:
    outside = [
        {
            "el": f"li:nth-of-type({i})",
            "kind": "text",
            "box": [0, 0, 10, 10],
            "past": [0, 0, 0, 50],
            "text": True,
            "item": -1,
        }
        for i in range(10)
    ]
    pixels = np.random.default_rng(0).integers(0, 256, (100, 200, 3), dtype=np.uint8)
    defects = find_defects(bare_layout(outside=outside), pixels, {}, KNOWN_SIZES)
    assert len(defects) == 6 and defects[-1].detail.endswith("(+4 more)")
    assert all(isinstance(d, Defect) for d in defects)
