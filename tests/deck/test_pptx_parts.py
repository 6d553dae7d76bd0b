"""The PPTX export's parts without a browser: words of a PDF, matching, line checks, SSIM, text
frames placed from baselines, font resolution, picture slides."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pptx import Presentation

from core.markdown_slides import slide_sections
from core.pdf import pymupdf
from deck.fidelity import Word, _changed_blocks, _match, ssim, words
from deck.fonts import east_asian_family, latin_family
from deck.layout import SlideLayout
from deck.pptx import SlideSource, write_pptx
from deck.pptx_text import FRAME_DESCENT, FontBook, frame


def test_words_split_cjk_characters_and_drop_punctuation(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=960, height=540)
    page.insert_text((72, 100), "Hello, world! (2024) • —", fontsize=24)
    page.insert_text((72, 200), "数据科学2024年", fontsize=24, fontname="china-s")
    found = words(page)
    assert [w.text for w in found] == ["Hello", "world", "2024", "数", "据", "科", "学", "2024", "年"]
    assert found[0].x == pytest.approx(72 * 1280 / 960, abs=0.5) and found[0].y == pytest.approx(100 * 1280 / 960, abs=0.5)


def _word(text: str, x: float, y: float, block: int = 0) -> Word:
    return Word(text, x, y, 20.0, block)


def test_match_pairs_equal_words_nearest_first() -> None:
    want = [_word("the", 0, 0), _word("the", 100, 0), _word("cat", 50, 0)]
    got = [_word("the", 101, 1), _word("the", 2, 0), _word("dog", 50, 0)]
    assert sorted(_match(want, got)) == [(0, 1), (1, 0)]


def test_a_block_whose_words_move_to_another_line_changed_its_line_count() -> None:
    want = [_word("one", 0, 0), _word("two", 60, 0), _word("three", 0, 30)]
    same = [_word("one", 1, 0), _word("two", 61, 0), _word("three", 1, 30)]
    rewrapped = [_word("one", 0, 0), _word("two", 0, 30), _word("three", 0, 60)]
    assert _changed_blocks(want, same, _match(want, same)) == []
    changed = _changed_blocks(want, rewrapped, _match(want, rewrapped))
    assert changed == [{"text": "one two three", "lines": [2, 3]}]


def test_ssim_is_one_for_the_same_image_and_lower_for_another() -> None:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (90, 160)).astype(np.float64)
    assert ssim(image, image) == pytest.approx(1.0)
    assert ssim(image, np.roll(image, 3, axis=1)) < 0.5


BOOK = FontBook({"lang": "en", "fonts": [{"family": "'Noto Sans', sans-serif", "weight": 400, "italic": False}]})


def _line(x: float, base: float, text: str, size: float = 20.0) -> dict:
    run = {"f": 0, "s": size, "c": "111111", "a": 1, "u": False, "k": False, "ls": 0, "va": 0, "href": None, "t": text}
    return {"x": x, "w": 10.0 * len(text), "top": base - 21, "bottom": base + 6, "base": base, "runs": [run]}


def test_a_frame_starts_so_its_first_baseline_lands_where_chromium_put_it() -> None:
    para = {"lines": [_line(100, 130, "first line"), _line(100, 160, "second line")], "bullet": None, "lh": 30.0}
    tf = frame([para], "l", [100, 100, 400, 60], BOOK)
    assert tf is not None
    assert tf.top == pytest.approx(130 - 30 + FRAME_DESCENT * 20)  # baseline - spacing + a fifth of the size
    assert tf.left == 100 and tf.xml.count("<a:br>") == 1 and 'spcPts val="2250"' in tf.xml  # 30 px = 22.5 pt


def test_a_blank_line_is_kept_and_an_irregular_pitch_starts_a_paragraph() -> None:
    blank = {"lines": [_line(0, 30, "a"), _line(0, 90, "b")], "bullet": None, "lh": 30.0}  # two pitches apart
    assert frame([blank], "l", [0, 0, 100, 100], BOOK).xml.count("<a:br>") == 2
    irregular = {"lines": [_line(0, 30, "a"), _line(0, 60, "b"), _line(0, 100, "c")], "bullet": None, "lh": 30.0}
    assert frame([irregular], "l", [0, 0, 100, 120], BOOK).xml.count("<a:p>") == 2


def test_blocks_overlapping_the_one_before_need_frames_of_their_own() -> None:
    first = {"lines": [_line(0, 30, "a"), _line(0, 60, "b")], "bullet": None, "lh": 30.0}
    second = {"lines": [_line(0, 50, "c")], "bullet": None, "lh": 30.0}
    assert frame([first, second], "l", [0, 0, 100, 100], BOOK, strict=True) is None
    assert frame([first, second], "l", [0, 0, 100, 100], BOOK).xml.count("<a:p>") == 2  # set right below
    spaced = {"lines": [_line(0, 110, "c")], "bullet": None, "lh": 30.0}
    assert 'spcBef><a:spcPts val="1500"/>' in frame([first, spaced], "l", [0, 0, 100, 100], BOOK).xml  # 20 px more


def _spaced(*lines: str) -> list[str]:
    """The frame's text for one paragraph of `lines`, each cut where a spacer run stands ("|")."""
    para = {"lines": [_line(0, 30 * (i + 1), text) for i, text in enumerate(lines)], "bullet": None, "lh": 30.0}
    xml = frame([para], "l", [0, 0, 400, 100], BOOK).xml
    assert xml.count('sz="100"') == xml.count("\u200b")  # each zero width space is a 1 pt run of its own
    return [re.sub(r"<[^>]+>", "", line).replace("\u200b", "|") for line in xml.split("<a:br>")]


def test_a_spacer_ends_each_text_before_a_change_between_asian_script_and_another() -> None:
    # digits, Latin letters and the Latin-1 middle dot are Latin to LibreOffice; fullwidth forms Asian;
    # spaces, dashes and ℃ are weak: they go with the script before them
    assert _spaced("营收12.6亿元，增长18.4%", "AI 平台·DeepData（2024年）") == [
        "营收|12.6|亿元，增长|18.4%",
        "AI |平台|·DeepData|（|2024|年）",
    ]
    assert _spaced("——《论语》", "2℃至8℃") == ["——|《论语》", "2℃|至|8℃"]  # weak text starting a paragraph is a script of its own
    assert _spaced("English only, 2024 — “quoted”") == ["English only, 2024 — “quoted”"]
    assert _spaced("数据", "2024") == ["数据", "2024"]  # a line break ends no text portion


def test_fonts_resolve_as_chromium_resolves_them() -> None:
    assert latin_family("'Liberation Sans', Arial, sans-serif") == "Noto Sans"  # neither installed here
    assert latin_family("'Noto Serif', serif") == "Noto Serif"
    assert east_asian_family("'Noto Sans', sans-serif", "zh-CN") == "Noto Sans CJK SC"
    assert east_asian_family("'Noto Serif', 'Noto Serif CJK SC', serif", "en") == "Noto Serif CJK SC"


def test_a_slide_whose_layout_could_not_be_read_is_a_picture(tmp_path: Path) -> None:
    png = tmp_path / "slide.png"
    Image.new("RGB", (1280, 720), "white").save(png)
    write_pptx([SlideSource(png, SlideLayout(error="layout not read: boom"))], (1280, 720), tmp_path / "deck.pptx", tmp_path)
    (slide,) = Presentation(str(tmp_path / "deck.pptx")).slides
    (picture,) = slide.shapes
    assert (picture.width, picture.height) == (12192000, 6858000)
    assert "boom" in picture._element.nvPicPr.cNvPr.get("descr")


def test_slide_sections_by_title_else_by_place() -> None:
    text = "# Intro\n\nHello\n\n---\n\n# Method\n\nSteps\n"
    assert slide_sections(text, ["Method", "Something else"]) == ["# Method\n\nSteps", ""]
    assert slide_sections(text, ["Cover", "Details"]) == ["# Intro\n\nHello", "# Method\n\nSteps"]
