from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from PIL import Image
from pptx import Presentation

from core.pdf import pymupdf
from deck.export import export_deck, slide_files
from render.renderer import Renderer
from tests.rendered import FIXTURES, SLIDES, session_loop


def _workspace(tmp_path: Path, names: list[str]) -> Path:
    shutil.copytree(FIXTURES / "assets", tmp_path / "assets")
    (tmp_path / "slides").mkdir()
    for number, name in zip((1, 2, 10), names):
        shutil.copy(SLIDES / name, tmp_path / "slides" / f"slide_{number:02d}.html")
    return tmp_path


def test_slide_files_sort_by_number(tmp_path: Path) -> None:
    for name in (
        "slide_10.html",
        "slide_2.html",
        "slide_01.html",
        "notes.html",
        "slide_3.png",
    ):
        (tmp_path / name).write_text("x")
    assert [p.name for p in slide_files(tmp_path)] == [
        "slide_01.html",
        "slide_2.html",
        "slide_10.html",
    ]
    with pytest.raises(ValueError, match="no slide_NN.html"):
        slide_files(_empty(tmp_path))
    with pytest.raises(ValueError, match="not a folder"):
        slide_files(tmp_path / "missing")


def _empty(tmp_path: Path) -> Path:
    empty = tmp_path / "empty"
    empty.mkdir()
    return empty


@pytest.mark.chromium
@session_loop
async def test_export_16_9_deck(renderer: Renderer, tmp_path: Path) -> None:
    ws = _workspace(
        tmp_path,
        ["clean_title_en.html", "clean_image_text_en.html", "clean_table_zh.html"],
    )
    export = await export_deck(
        renderer,
        ws / "slides",
        "16:9",
        ws / "deck.pdf",
        png_dir=ws / "renders",
        pptx_path=ws / "deck.pptx",
    )
    assert export.pages == 3 and export.defects == 0
    with pymupdf.open(ws / "deck.pdf") as pdf:
        assert [(p.rect.width, p.rect.height) for p in pdf] == [(960, 540)] * 3
        assert "Retrieval-Augmented" in pdf[0].get_text() and "华东" in pdf[2].get_text()
        assert pdf[1].get_images()  # the photo came along
    assert [p.name for p in export.pngs] == [
        "slide_01.png",
        "slide_02.png",
        "slide_10.png",
    ]
    assert [Image.open(p).size for p in export.pngs] == [(1280, 720)] * 3
    deck = Presentation(str(ws / "deck.pptx"))
    assert (deck.slide_width, deck.slide_height) == (
        12192000,
        6858000,
    )  # 13.333 x 7.5 in
    texts = [" ".join(s.text_frame.text for s in slide.shapes if s.has_text_frame) for slide in deck.slides]
    assert "Retrieval-Augmented" in texts[0] and "Alpine" in texts[1]  # editable text, not a picture
    assert any(s.has_table for s in deck.slides[2].shapes)


@pytest.mark.chromium
@session_loop
async def test_export_4_3_deck_keeps_one_page_per_slide(renderer: Renderer, tmp_path: Path) -> None:
    ws = _workspace(tmp_path, ["clean_43_zh.html", "overflow_1_list_en.html"])
    export = await export_deck(renderer, ws / "slides", "4:3", ws / "out" / "deck.pdf", png_dir=ws / "png")
    assert export.pages == 2 and export.pptx is None and export.defects > 0
    with pymupdf.open(ws / "out" / "deck.pdf") as pdf:
        assert [(p.rect.width, p.rect.height) for p in pdf] == [(720, 540)] * 2


@session_loop
async def test_export_reuses_inspections_of_unchanged_slides(renderer: Renderer, tmp_path: Path) -> None:
    from render.inspection import inspect_slide

    slides = tmp_path / "slides"
    slides.mkdir()
    for n in (1, 2):
        (slides / f"slide_0{n}.html").write_text(
            f'<html><body style="margin:0;width:1280px;height:720px"><h1>Slide {n}</h1></body></html>'
        )
    for n in (1, 2):
        await inspect_slide(renderer, tmp_path, f"slides/slide_0{n}.html", "16:9")
    (slides / "slide_02.html").write_text('<html><body style="margin:0;width:1280px;height:720px"><h1>Changed</h1></body></html>')
    deck = await export_deck(renderer, slides, "16:9", tmp_path / "deck.pdf", png_dir=tmp_path / "previews", workspace=tmp_path)
    first, second = deck.results
    assert first.seconds == 0.0 and second.seconds > 0.0  # slide 1 reused; slide 2 changed, so rendered again
    assert (
        first.page_data.layout.data["title"] == "Slide 1" and second.page_data.layout.data["title"] == "Changed"
    )  # layouts come with the prints
    assert (tmp_path / "previews" / "slide_01.png").read_bytes() == (tmp_path / "renders" / "slide_01.png").read_bytes()
    assert "Changed" in pymupdf.open(tmp_path / "deck.pdf")[1].get_text()


@session_loop
async def test_inspection_does_not_wait_for_its_pdf_page_and_a_failed_print_is_rendered_again(
    renderer: Renderer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.async_api import Error, Page

    from render.inspection import inspect_slide

    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "slide_01.html").write_text(
        '<html><body style="margin:0;width:1280px;height:720px"><h1>Only</h1></body></html>'
    )
    entered, release = asyncio.Event(), asyncio.Event()

    async def stalled_print(self: Page, **options: object) -> bytes:
        entered.set()
        await release.wait()
        raise Error("print failed")

    monkeypatch.setattr(Page, "pdf", stalled_print)
    # Returns while its page is still printing (awaiting the print would never finish).
    await asyncio.wait_for(inspect_slide(renderer, tmp_path, "slides/slide_01.html", "16:9"), 30)
    await asyncio.wait_for(entered.wait(), 30)  # the print starts after the page's layout is read
    release.set()
    monkeypatch.undo()
    deck = await export_deck(
        renderer, tmp_path / "slides", "16:9", tmp_path / "deck.pdf", png_dir=tmp_path / "previews", workspace=tmp_path
    )
    assert deck.pages == 1 and deck.results[0].seconds > 0.0  # rendered again, not reused
    assert "Only" in pymupdf.open(tmp_path / "deck.pdf")[0].get_text()
