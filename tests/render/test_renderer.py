from __future__ import annotations

import asyncio
import math
import signal
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from PIL import Image

from core.pdf import pymupdf
from render.chromium import chromium_processes
from render.config import RenderConfig
from render.page_pool import with_base
from render.renderer import Renderer, RenderTimeout, aspect_size, blocked_reason
from tests.rendered import FIXTURES, SLIDES, session_loop


def test_aspect_sizes() -> None:
    assert aspect_size("16:9") == (1280, 720)
    assert aspect_size("4:3") == (960, 720)
    assert aspect_size("A1") == aspect_size("a1") == (2244, 3178)
    for name in ("A2", "A3", "A4"):
        width, height = aspect_size(name)
        assert height / width == pytest.approx(math.sqrt(2), rel=0.01)
    assert aspect_size("A3")[0] == pytest.approx(2244 / 2, abs=1)


@pytest.mark.parametrize("bad", ["free", "5:4", "", "A5"])
def test_unknown_aspect_names_itself(bad: str) -> None:
    with pytest.raises(ValueError, match=repr(bad).replace("'", "'")):
        aspect_size(bad)


def test_blocked_reason(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert blocked_reason((root / "assets" / "a.png").as_uri(), root) is None
    assert blocked_reason("data:image/png;base64,AAAA", root) is None
    assert blocked_reason((tmp_path / "secret.txt").as_uri(), root) == "blocked: outside the workspace"
    assert blocked_reason((root / ".." / "secret.txt").as_uri(), root) == "blocked: outside the workspace"
    assert "external URL" in (blocked_reason("https://example.com/x.png", root) or "")


def test_base_goes_after_the_doctype_and_into_the_head() -> None:
    assert with_base("<!DOCTYPE html><html><head><title>t</title>", "file:///w/").startswith(
        '<!DOCTYPE html><html><head><base href="file:///w/"><title>'
    )
    assert with_base("<!doctype html><p>x</p>", "file:///w/") == '<!doctype html><base href="file:///w/"><p>x</p>'
    assert with_base("<p>x</p>", "file:///w/") == '<base href="file:///w/"><p>x</p>'


def _pixels(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB")).astype(np.int16)


@pytest.mark.chromium
@session_loop
async def test_render_writes_png_and_pdf_at_slide_size(renderer: Renderer, tmp_path: Path) -> None:
    result = await renderer.render(
        SLIDES / "clean_43_zh.html",
        "4:3",
        png_path=tmp_path / "s.png",
        workspace=FIXTURES,
        want_pdf=True,
    )
    assert Image.open(result.png_path).size == (960, 720)
    assert result.seconds > 0 and result.attempts == 1
    assert result.pdf is not None
    with pymupdf.open("pdf", result.pdf) as pdf:
        assert pdf.page_count == 1
        assert (pdf[0].rect.width, pdf[0].rect.height) == pytest.approx((720, 540))
        assert "光合作用" in pdf[0].get_text()


@pytest.mark.chromium
@session_loop
async def test_text_hidden_to_see_the_chart_beneath_is_shown_again(renderer: Renderer, tmp_path: Path) -> None:
    """The capture beneath a caption over a chart hides the caption only for itself: the PNG, the PDF and the
    page read for the PPTX all have it."""
    slide = FIXTURES / "review" / "d_overlap_caption_on_img_chart.html"
    result = await renderer.render(slide, "16:9", png_path=tmp_path / "s.png", workspace=FIXTURES, want_pdf=True)
    assert any("read with the box hidden" in d.detail for d in result.defects), result.defects
    caption = np.asarray(Image.open(result.png_path).convert("RGB"))[290:330, 660:900]
    assert (np.abs(caption.astype(int) - (255, 247, 237)).sum(axis=2) < 12).mean() > 0.5  # the caption's backing
    assert result.pdf is not None
    with pymupdf.open("pdf", result.pdf) as pdf:
        assert "two new rooftop" in pdf[0].get_text()
    assert "rooftop" in str(result.page_data)


@pytest.mark.chromium
@session_loop
async def test_a_webp_render_holds_the_pixels_of_chromiums_png(renderer: Renderer, tmp_path: Path) -> None:
    """Renders are written as lossless WebP where the server reads it: the model sees exactly Chromium's pixels."""
    args = (SLIDES / "clean_43_zh.html", "4:3")
    png = await renderer.render(*args, png_path=tmp_path / "s.png", workspace=FIXTURES)
    webp = await renderer.render(*args, png_path=tmp_path / "s.webp", workspace=FIXTURES)
    assert Image.open(webp.png_path).format == "WEBP" and Image.open(png.png_path).format == "PNG"
    assert np.array_equal(
        np.asarray(Image.open(webp.png_path).convert("RGB")), np.asarray(Image.open(png.png_path).convert("RGB"))
    )
    assert webp.png_path.stat().st_size < png.png_path.stat().st_size / 2
    assert webp.defects == png.defects
    with pytest.raises(ValueError, match="not '.jpg'"):
        await renderer.render(*args, png_path=tmp_path / "s.jpg", workspace=FIXTURES)


@pytest.mark.chromium
@session_loop
async def test_poster_renders_at_a1(renderer: Renderer, tmp_path: Path) -> None:
    page = tmp_path / "poster.html"
    page.write_text("<html><body style='margin:0'><h1 style='font-size:120px'>A1 poster</h1></body></html>")
    result = await renderer.render(page, "A1", png_path=tmp_path / "p.png")
    assert Image.open(result.png_path).size == (2244, 3178)
    assert result.defects == ()


@pytest.mark.chromium
@session_loop
async def test_requests_outside_the_workspace_are_blocked_and_counted(renderer: Renderer, tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes((FIXTURES / "assets" / "photo.png").read_bytes())
    ws = tmp_path / "ws"
    (ws / "slides").mkdir(parents=True)
    (ws / "assets").mkdir()
    (ws / "assets" / "ok.png").write_bytes((FIXTURES / "assets" / "photo.png").read_bytes())
    slide = ws / "slides" / "s.html"
    slide.write_text(
        '<html><body><p>Images</p><img src="../assets/ok.png" alt="ok"><img src="../../secret.png" alt="x">'
        '<img src="http://example.com/x.png" alt="y"><img src="../assets/gone.png" alt="z"></body></html>'
    )
    result = await renderer.render(slide, "16:9", png_path=tmp_path / "s.png", workspace=ws)
    assert result.blocked_requests == 2
    assert result.failed_requests[(tmp_path / "secret.png").as_uri()] == "blocked: outside the workspace"
    assert result.failed_requests[(ws / "assets" / "gone.png").as_uri()] == "file not found"
    assert (ws / "assets" / "ok.png").as_uri() not in result.failed_requests
    assert sorted(d.element for d in result.defects if d.code == "broken_image") == [
        "img:nth-of-type(2)",
        "img:nth-of-type(3)",
        "img:nth-of-type(4)",
    ]


@pytest.mark.chromium
@session_loop
async def test_cjk_and_emoji_render_as_glyphs(renderer: Renderer, tmp_path: Path) -> None:
    cells = "".join(
        f"<div style='position:absolute;left:{x}px;top:100px;font-size:300px;line-height:1'>{c}</div>"
        for x, c in ((20, "永"), (420, "中"), (820, "😀"))
    )
    page = tmp_path / "glyphs.html"
    page.write_text(
        f"<html><head><meta charset='utf-8'></head><body style='margin:0;background:#fff;color:#000'>{cells}</body></html>"
    )
    result = await renderer.render(page, "16:9", png_path=tmp_path / "g.png")
    pixels = _pixels(result.png_path)
    yong, zhong, emoji = (pixels[100:420, x : x + 320] for x in (20, 420, 820))
    for glyph in (yong, zhong):
        ink = (glyph.max(axis=2) < 100).mean()
        assert 0.05 < ink < 0.6  # strokes, not an empty box and not a filled block
    assert (np.abs(yong - zhong).max(axis=2) > 100).mean() > 0.05  # two different glyphs, not two tofu boxes
    saturation = emoji.max(axis=2) - emoji.min(axis=2)
    assert (saturation > 100).mean() > 0.2  # the colour emoji font, not a monochrome outline


@pytest.mark.chromium
@session_loop
async def test_scripts_of_one_slide_do_not_leak_into_the_next(renderer: Renderer, tmp_path: Path) -> None:
    script = (
        "<script>const shared = '{v}'; const p = document.createElement('p'); p.id = 'ran{v}';"
        " p.textContent = 'script ran'; document.body.append(p);</script>"
    )
    for v in ("a", "b"):
        (tmp_path / f"{v}.html").write_text(f"<html><body><h1>Slide {v}</h1>{script.format(v=v)}</body></html>")
    (tmp_path / "plain.html").write_text("<html><body><h1>No script</h1></body></html>")
    for v in ("a", "plain", "b", "a"):
        result = await renderer.render(tmp_path / f"{v}.html", "16:9", png_path=tmp_path / f"{v}.png")
        elements = {t["el"] for t in result.layout["texts"]}
        assert (f"p#ran{v}" in elements) == (v != "plain"), elements


@pytest.mark.chromium
async def test_concurrent_renders_share_a_bounded_page_pool(tmp_path: Path) -> None:
    files = sorted(SLIDES.glob("clean_*_en.html"))[:8]
    async with Renderer(RenderConfig(max_concurrent=4, max_pages=2), roots=[FIXTURES, tmp_path]) as renderer:
        results = await asyncio.gather(
            *(renderer.render(f, "16:9", png_path=tmp_path / f"{f.stem}.png", workspace=FIXTURES) for f in files)
        )
        assert renderer.open_pages <= 2
    assert [r.png_path.is_file() for r in results] == [True] * len(files)


@pytest.mark.chromium
@pytest.mark.slow
async def test_batch_survives_chromium_being_killed(tmp_path: Path) -> None:
    files = sorted(SLIDES.glob("clean_*.html"))[:12]
    async with Renderer(RenderConfig(max_concurrent=4, max_pages=4, timeout_s=20), roots=[FIXTURES, tmp_path]) as renderer:
        pid = renderer.browser_pid
        assert pid in chromium_processes()  # the browser, found as the renderer's cleanup finds it
        batch = [
            asyncio.create_task(renderer.render(f, "16:9", png_path=tmp_path / f"{f.stem}.png", workspace=FIXTURES))
            for f in files
        ]
        await asyncio.wait(batch, return_when=asyncio.FIRST_COMPLETED)  # kill mid-batch
        psutil.Process(pid).send_signal(signal.SIGKILL)
        results = await asyncio.gather(*batch)
        assert renderer.restarts >= 1 and renderer.browser_pid != pid
        assert len(results) == 12 and all(r.png_path.is_file() for r in results)
        assert any(r.attempts == 2 for r in results)
        again = await renderer.render(files[0], "16:9", png_path=tmp_path / "again.png", workspace=FIXTURES)
        assert again.attempts == 1


@pytest.mark.chromium
@pytest.mark.slow
async def test_hung_chromium_is_replaced(tmp_path: Path) -> None:
    slide = SLIDES / "clean_title_en.html"
    async with Renderer(RenderConfig(timeout_s=3), roots=[FIXTURES, tmp_path]) as renderer:
        await renderer.render(slide, "16:9", png_path=tmp_path / "a.png", workspace=FIXTURES)
        stuck = psutil.Process(renderer.browser_pid)
        stuck.send_signal(signal.SIGSTOP)
        result = await renderer.render(slide, "16:9", png_path=tmp_path / "b.png", workspace=FIXTURES)
        assert result.attempts == 2 and renderer.restarts == 1
        for _ in range(50):  # killed at once; gone (or a zombie) as soon as the kernel is done
            if not stuck.is_running() or stuck.status() == psutil.STATUS_ZOMBIE:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail(f"hung Chromium {stuck.pid} still {stuck.status()}")


@pytest.mark.chromium
@pytest.mark.slow
async def test_a_slide_that_hangs_fails_cleanly_and_the_renderer_goes_on(
    tmp_path: Path,
) -> None:
    hang = tmp_path / "hang.html"
    hang.write_text("<html><body><p>never</p><script>while (true) {}</script></body></html>")
    async with Renderer(RenderConfig(timeout_s=3), roots=[FIXTURES, tmp_path]) as renderer:
        started = time.perf_counter()
        with pytest.raises(RenderTimeout, match=r"hang\.html: .* 3 s render timeout"):
            await renderer.render(hang, "16:9", png_path=tmp_path / "h.png")
        assert time.perf_counter() - started < 3 + 3  # one timeout: the browser still answered, so no retry
        assert renderer.restarts == 0
        ok = await renderer.render(
            SLIDES / "clean_title_en.html",
            "16:9",
            png_path=tmp_path / "ok.png",
            workspace=FIXTURES,
        )
        assert ok.defects == ()


@session_loop
async def test_render_rejects_unusable_input(renderer: Renderer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        await renderer.render(tmp_path / "missing.html", "16:9", png_path=tmp_path / "x.png")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ValueError, match="not an HTML file"):
        await renderer.render(tmp_path / "notes.txt", "16:9", png_path=tmp_path / "x.png")
    with pytest.raises(ValueError, match="outside the workspace"):
        await renderer.render(
            SLIDES / "clean_title_en.html",
            "16:9",
            png_path=tmp_path / "x.png",
            workspace=tmp_path,
        )
    with pytest.raises(ValueError, match="unknown aspect"):
        await renderer.render(SLIDES / "clean_title_en.html", "3:2", png_path=tmp_path / "x.png")


@pytest.mark.chromium
async def test_device_scale_factor_scales_the_png_not_the_measures(tmp_path: Path) -> None:
    async with Renderer(RenderConfig(device_scale_factor=2), roots=[FIXTURES, tmp_path]) as renderer:
        clean = await renderer.render(SLIDES / "clean_dark_en.html", "16:9", png_path=tmp_path / "c.png")
        faint = await renderer.render(SLIDES / "low_contrast_1_grey_en.html", "16:9", png_path=tmp_path / "f.png")
    assert Image.open(clean.png_path).size == (2560, 1440) and clean.defects == ()
    assert [d.code for d in faint.defects] == ["low_contrast"]
