"""The editable PPTX on the labelled set (tests/fixtures/pptx): native text, tables and
pictures, edits that save, and the LibreOffice fidelity check against the deck's PDF."""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from pathlib import Path

import pytest
import pytest_asyncio
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from agents.deck import main
from core.pdf import pymupdf
from deck.config import DeckConfig, PptxMode
from deck.export import DeckExport, export_deck
from deck.fidelity import words
from render.renderer import Renderer
from tests.rendered import FIXTURES, fixture_aspect

LABELLED = FIXTURES / "pptx"
NAMES = sorted(p.name for p in LABELLED.glob("*.html") if fixture_aspect(p) == "16:9")  # the labelled 16:9 deck's slides
MANUSCRIPT = "# Why retrieval helps language models\n\nRetrieval keeps answers current.\n\n---\n\n# 大模型在课堂中的应用\n\n课堂上的用法。\n"


def _deck(root: Path, names: list[str], source: Path = LABELLED) -> Path:
    """A workspace with the named slides of `source` as slide_NN.html (their ../assets links resolve)."""
    shutil.copytree(FIXTURES / "assets", root / "assets")
    (root / "slides").mkdir()
    for number, name in enumerate(names, 1):
        shutil.copy(source / name, root / "slides" / f"slide_{number:02d}.html")
    return root


async def _export(renderer: Renderer, ws: Path, **options: object) -> DeckExport:
    """The workspace's slides exported as ws/deck.pdf, ws/deck.pptx and previews."""
    return await export_deck(
        renderer,
        ws / "slides",
        "16:9",
        ws / "deck.pdf",
        png_dir=ws / "previews",
        pptx_path=ws / "deck.pptx",
        workspace=ws,
        **options,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def labelled(renderer: Renderer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DeckExport]:
    """The labelled 16:9 slides exported once as an editable PPTX."""
    ws = _deck(tmp_path_factory.mktemp("labelled"), NAMES)
    export = await _export(renderer, ws, manuscript=MANUSCRIPT)
    return ws, export


def _html(ws: Path, number: int) -> str:
    return (ws / "slides" / f"slide_{number:02d}.html").read_text(encoding="utf-8")


def _pptx_text(slide) -> str:  # type: ignore[no-untyped-def]
    """The slide's text, spaces removed, with the numbers of its numbered paragraphs (PowerPoint counts them)."""
    parts = []
    for shape in slide.shapes:
        if shape.has_text_frame:
            parts.append(shape.text_frame.text)
            for number in shape._element.xpath(".//a:buAutoNum/@startAt"):
                parts.append(f" {number}.")
        elif getattr(shape, "has_table", False) and shape.has_table:
            parts += [cell.text for row in shape.table.rows for cell in row.cells]
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", "".join(parts)))


@pytest.mark.chromium
@pytest.mark.asyncio(loop_scope="session")
async def test_slides_come_as_text_native_tables_and_one_picture_per_img(labelled: tuple[Path, DeckExport]) -> None:
    ws, _ = labelled
    deck = Presentation(str(ws / "deck.pptx"))
    with pymupdf.open(ws / "deck.pdf") as pdf:
        for number, (slide, page) in enumerate(zip(deck.slides, pdf), 1):
            html = _html(ws, number)
            text = _pptx_text(slide)
            missing = [w.text for w in words(page) if w.text not in text]
            assert not missing, f"slide {number}: words of the PDF missing from the PPTX's text: {missing}"
            tables = [s for s in slide.shapes if getattr(s, "has_table", False) and s.has_table]
            assert len(tables) == html.count("<table"), f"slide {number}"
            images = [s for s in slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE and s.name.startswith("Image:")]
            assert len(images) == len(re.findall(r"<img\b", html)), f"slide {number}"
            assert all(s._element.nvPicPr.cNvPr.get("descr") for s in images)  # alt text
    table_en = deck.slides[NAMES.index("table_en.html")]
    table = next(s for s in table_en.shapes if getattr(s, "has_table", False) and s.has_table).table
    assert table.cell(0, 1).text == "Accuracy (%)" and table.cell(0, 1).is_merge_origin and table.cell(5, 3).text == "41.6"
    chart_en = deck.slides[NAMES.index("chart_en.html")]
    chart = next(s for s in chart_en.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE)  # the SVG as a picture
    assert chart._element.nvPicPr.cNvPr.get("descr").startswith("Bar chart: energy per 1,000 queries")
    assert "42 Wh" in "".join(s.text_frame.text for s in chart_en.shapes if s.has_text_frame)  # its labels stay text


@pytest.mark.chromium
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_every_img_of_the_fixtures_is_a_picture_and_every_table_native(renderer: Renderer, tmp_path: Path) -> None:
    names = sorted(p.name for p in (FIXTURES / "slides").glob("clean_*.html") if fixture_aspect(p) == "16:9")
    ws = _deck(tmp_path, names, FIXTURES / "slides")
    await _export(renderer, ws)
    deck = Presentation(str(ws / "deck.pptx"))
    for number, slide in enumerate(deck.slides, 1):
        html = _html(ws, number)
        images = [s for s in slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE and s.name.startswith("Image:")]
        tables = [s for s in slide.shapes if getattr(s, "has_table", False) and s.has_table]
        assert (len(images), len(tables)) == (len(re.findall(r"<img\b", html)), html.count("<table")), names[number - 1]


@pytest.mark.chromium
@pytest.mark.asyncio(loop_scope="session")
async def test_text_keeps_fonts_and_chromiums_line_breaks(labelled: tuple[Path, DeckExport]) -> None:
    ws, _ = labelled
    deck = Presentation(str(ws / "deck.pptx"))
    paragraphs_zh = deck.slides[NAMES.index("paragraphs_zh.html")]
    body = next(s for s in paragraphs_zh.shapes if s.has_text_frame and "统计学是从数据" in s.text_frame.text)
    title, first, second = body.text_frame.paragraphs  # the heading and two paragraphs of one column: one frame
    assert title.text == "为什么要学习统计学" and first.text.startswith("统计学是从数据")
    assert first.text.count("\v") == 2 and second.text.count("\v") == 2  # 3 lines each, as Chromium broke them (a:br reads \v)
    assert body.text_frame._txBody.bodyPr.get("wrap") == "none"
    run = first.runs[0]._r.rPr
    ns = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
    assert run.find("a:ea", ns).get("typeface") == "Noto Sans CJK SC" and run.get("sz") == "1950"  # 26 px
    bold = [r for r in first.runs if "基本的统计思维" in r.text]
    assert bold and bold[0].font.bold


@pytest.mark.chromium
@pytest.mark.asyncio(loop_scope="session")
async def test_notes_carry_the_manuscript_section_and_links(labelled: tuple[Path, DeckExport]) -> None:
    ws, _ = labelled
    deck = Presentation(str(ws / "deck.pptx"))
    notes = {i: s.notes_slide.notes_text_frame.text for i, s in enumerate(deck.slides, 1) if s.has_notes_slide}
    assert "Retrieval keeps answers current." in notes[1]  # bullets_en: its title is a section's heading
    assert "课堂上的用法" in notes[2]
    assert "the original paper: https://arxiv.org/abs/1706.03762" in notes[NAMES.index("paragraphs_en.html") + 1]  # its link


@pytest.mark.chromium
@pytest.mark.asyncio(loop_scope="session")
async def test_edited_text_saves_and_reopens(labelled: tuple[Path, DeckExport], tmp_path: Path) -> None:
    ws, _ = labelled
    deck = Presentation(str(ws / "deck.pptx"))
    title = next(s for s in deck.slides[0].shapes if s.has_text_frame and "retrieval" in s.text_frame.text)
    title.text_frame.paragraphs[0].runs[0].text = "Edited title"
    deck.save(str(tmp_path / "edited.pptx"))
    again = Presentation(str(tmp_path / "edited.pptx"))
    assert any(s.has_text_frame and s.text_frame.text.startswith("Edited title") for s in again.slides[0].shapes)
    assert len(again.slides) == len(deck.slides)


@pytest.mark.chromium
@pytest.mark.libreoffice
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_check_renders_with_libreoffice_and_the_labelled_set_meets_the_targets(
    labelled: tuple[Path, DeckExport], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, _ = labelled
    assert main(["check", str(ws / "deck.pptx"), "--against", str(ws / "deck.pdf"), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    deck = figures["deck"]
    assert deck["words_kept"] >= 0.95 and deck["displacement_px"]["median"] <= 4 and deck["line_count_changed"] == 0, deck
    assert deck["within_targets"] and deck["tables"] == 2 and figures["renderer"].startswith("LibreOffice")
    assert [s["objects"]["tables"] for s in figures["slides"]] == [int(name.startswith("table_")) for name in NAMES]
    assert all(
        s["words_kept"] >= 0.95 and s["displacement_px"]["median"] <= 4 and s["line_count_changed"] == 0
        for s in figures["slides"]
    ), figures["slides"]


@pytest.mark.chromium
@pytest.mark.libreoffice
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_a_rewrapped_block_is_counted(renderer: Renderer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PPTX whose paragraph re-wraps (its text frame made narrower and wrapping) fails the line check."""
    ws = _deck(tmp_path, ["paragraphs_en.html"])
    await _export(renderer, ws)
    deck = Presentation(str(ws / "deck.pptx"))
    body = next(s for s in deck.slides[0].shapes if s.has_text_frame and s.text_frame.text.startswith("Stacking"))
    body.width = body.width // 2
    body.text_frame.word_wrap = True
    deck.save(str(ws / "narrow.pptx"))
    assert main(["check", str(ws / "narrow.pptx"), "--against", str(ws / "deck.pdf"), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["deck"]["line_count_changed"] >= 1 and not figures["deck"]["within_targets"]
    assert figures["slides"][0]["changed_blocks"][0]["lines"][1] > figures["slides"][0]["changed_blocks"][0]["lines"][0]


def _without_spacers(pptx: Path, out: Path) -> None:
    """The PPTX without the zero width spaces that end text before a change of script (deck/pptx_text.py)."""
    deck = Presentation(str(pptx))
    for slide in deck.slides:
        for run in slide._element.xpath(".//a:r[a:t='\u200b']"):
            run.getparent().remove(run)
    deck.save(str(out))


@pytest.mark.chromium
@pytest.mark.libreoffice
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_dense_chinese_with_digits_stays_in_place_under_libreoffices_default_locale(
    renderer: Renderer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LibreOffice in its default locale widens each change between Asian and other text by a fifth of
    the height of the text before it: the spacers keep the slide within 3 px, and the check, run in
    that locale, sees the same PPTX without them shift."""
    ws = _deck(tmp_path, ["dense_zh_digits.html"])
    await _export(renderer, ws)
    assert main(["check", str(ws / "deck.pptx"), "--against", str(ws / "deck.pdf"), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    deck = figures["deck"]
    assert figures["locale"] == "en-US" and deck["words"] > 250, figures
    assert deck["words_kept"] == 1.0 and deck["line_count_changed"] == 0 and deck["displacement_px"]["median"] <= 3, deck
    _without_spacers(ws / "deck.pptx", ws / "unspaced.pptx")
    assert main(["check", str(ws / "unspaced.pptx"), "--against", str(ws / "deck.pdf"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deck"]["displacement_px"]["median"] > 10


@pytest.mark.chromium
@pytest.mark.libreoffice
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_the_export_runs_the_check_when_configured(renderer: Renderer, tmp_path: Path) -> None:
    ws = _deck(tmp_path, ["bullets_zh.html", "table_en.html"])
    export = await _export(renderer, ws, deck=DeckConfig(check=True))
    assert export.fidelity is not None and export.fidelity["deck"]["within_targets"], export.fidelity
    assert [s["objects"]["tables"] for s in export.fidelity["slides"]] == [0, 1]


@pytest.mark.chromium
@pytest.mark.asyncio(loop_scope="session")
async def test_picture_mode_writes_one_picture_per_slide(renderer: Renderer, tmp_path: Path) -> None:
    ws = _deck(tmp_path, ["bullets_en.html", "table_zh.html"])
    await _export(renderer, ws, deck=DeckConfig(pptx_mode=PptxMode.picture))
    deck = Presentation(str(ws / "deck.pptx"))
    assert [[s.shape_type for s in slide.shapes] for slide in deck.slides] == [[MSO_SHAPE_TYPE.PICTURE]] * 2
    picture = deck.slides[0].shapes[0]
    assert (picture.left, picture.top, picture.width, picture.height) == (0, 0, deck.slide_width, deck.slide_height)


@pytest.mark.chromium
@pytest.mark.asyncio(loop_scope="session")
async def test_an_editable_pptx_needs_a_renderer_that_reads_layouts(tmp_path: Path) -> None:
    ws = _deck(tmp_path, ["bullets_en.html"])
    async with Renderer(roots=[tmp_path]) as plain:
        with pytest.raises(ValueError, match="no layout was read for slide_01.html"):
            await _export(plain, ws)


def test_check_cli_names_a_missing_or_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "none.pptx"), "--against", str(tmp_path / "none.pdf")]) == 2
    assert "none.pptx: no such file" in capsys.readouterr().err
    Presentation().save(str(tmp_path / "deck.pptx"))
    (tmp_path / "deck.pdf").write_text("not a pdf")
    assert main(["check", str(tmp_path / "deck.pptx"), "--against", str(tmp_path / "deck.pdf")]) == 2
    assert "deck.pdf: not a readable PDF" in capsys.readouterr().err
    (tmp_path / "broken.pptx").write_text("not a zip")
    assert main(["check", str(tmp_path / "broken.pptx"), "--against", str(tmp_path / "deck.pdf")]) == 2
    assert "broken.pptx: not a readable PPTX" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["check", str(tmp_path / "deck.pptx"), "--against", str(tmp_path / "deck.pdf"), "--locale", "ja JP"])
    assert exited.value.code == 2 and "--locale" in capsys.readouterr().err
