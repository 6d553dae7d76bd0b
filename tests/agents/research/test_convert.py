"""convert_to_markdown on real PDFs (English and Chinese), Office files and HTML; bad files are error observations."""

from __future__ import annotations

import base64
import io
import re
import shutil
from pathlib import Path

import openpyxl
import pytest
from PIL import Image
from pptx import Presentation
from pptx.util import Inches

from agents.sandbox import Workspace
from core.pdf import pymupdf
from tests.agents.research.helpers import Call


def _listed_images(text: str) -> list[tuple[str, int, int]]:
    return [(m[1], int(m[2]), int(m[3])) for m in re.finditer(r"^- (\S+) \((\d+)x(\d+)\)$", text, re.MULTILINE)]


@pytest.mark.parametrize(
    ("name", "phrase"),
    [("arxiv_1706.03762", "Scaled Dot-Product Attention"), ("edu_zh_thu-compiler-principles-notes", "语法分析")],
)
async def test_pdf_keeps_text_and_extracts_images_largest_first(
    call: Call, workspace: Workspace, shared_data: Path, name: str, phrase: str
) -> None:
    shutil.copy(shared_data / f"{name}.pdf", workspace.root / "doc.pdf")
    obs = await call("convert_to_markdown", file_path="doc.pdf", output_folder="converted")
    assert not obs.is_error, obs.text
    markdown = (workspace.root / "converted/doc.md").read_text()
    assert phrase in markdown
    images = _listed_images(obs.text)
    assert len(images) >= 3
    areas = [w * h for _, w, h in images]
    assert areas == sorted(areas, reverse=True)
    for path, width, height in images:
        assert f"]({Path(path).name})" in markdown  # referenced relative to the Markdown file
        with Image.open(workspace.root / path) as img:
            assert img.size == (width, height)


def _png(color: tuple[int, int, int], size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


async def test_pptx_and_html_images_become_files(call: Call, workspace: Workspace) -> None:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "数值分析 overview"
    slide.shapes.add_picture(io.BytesIO(_png((200, 30, 30), (120, 80))), Inches(1), Inches(2))
    slide.shapes.add_picture(io.BytesIO(_png((30, 30, 200), (300, 200))), Inches(4), Inches(2))
    deck.save(workspace.root / "deck.pptx")
    obs = await call("convert_to_markdown", file_path="deck.pptx", output_folder="out")
    assert not obs.is_error, obs.text
    assert "# 数值分析 overview" in (workspace.root / "out/deck.md").read_text()
    assert [(w, h) for _, w, h in _listed_images(obs.text)] == [(300, 200), (120, 80)]

    inline = base64.b64encode(_png((0, 128, 0), (64, 32))).decode()
    (workspace.root / "page.html").write_text(
        f"<html><body><h1>Report</h1><p>Growth <img src='data:image/png;base64,{inline}'></p></body></html>"
    )
    html = await call("convert_to_markdown", file_path="page.html", output_folder="out")
    assert "# Report" in (workspace.root / "out/page.md").read_text() and _listed_images(html.text) == [
        ("out/page-image-1.png", 64, 32)
    ]


async def test_xlsx_becomes_a_table(call: Call, workspace: Workspace) -> None:
    book = openpyxl.Workbook()
    book.active.append(["year", "students"])
    book.active.append([2024, 1200])
    book.save(workspace.root / "table.xlsx")
    obs = await call("convert_to_markdown", file_path="table.xlsx", output_folder=".")
    assert "No images were found." in obs.text
    assert "| year | students |" in (workspace.root / "table.md").read_text()


async def test_bad_encrypted_and_unsupported_files_are_error_observations(
    call: Call, workspace: Workspace, shared_data: Path
) -> None:
    (workspace.root / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    with pymupdf.open(shared_data / "arxiv_1409.0473.pdf") as doc:
        doc.save(workspace.root / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    (workspace.root / "notes.xyz").write_text("?")
    (workspace.root / "fake.docx").write_bytes(b"not a zip")
    for name, message in [
        ("broken.pdf", "not a readable PDF"),
        ("locked.pdf", "encrypted"),
        ("notes.xyz", "unsupported file type"),
        ("fake.docx", "cannot be read as .docx"),
        ("missing.pdf", "missing.pdf"),
    ]:
        obs = await call("convert_to_markdown", file_path=name, output_folder="out")
        assert obs.is_error and message in obs.text, (name, obs.text)
