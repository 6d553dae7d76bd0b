"""The content gate: its labelled set (both parts, both sources), its checks on their own, and its CLI contract."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.pdf import pymupdf
from core.run.reader import DECK_TEXT
from fakes.runs import RolloutSpec, candidate
from filters.config import FiltersConfig
from filters.content import CODES, ContentGate, SlideText, check_content, check_deck
from filters.content_reading import Block, Page, slides_of
from tests.filters.content_set import (
    CORE,
    HARD,
    PAGE_DECKS,
    PARTS,
    TEXT_DECKS,
    LabelledDeck,
    build_pdf,
    figures,
    load_set,
    read,
    read_page_deck,
)
from tests.rendered import session_loop

REPO = Path(__file__).resolve().parents[2]
CFG = FiltersConfig()
SHOWN_IN_TEST_PART = ("chart", "table", "code", "math", "diagram", "divider")  # what the good page decks kept back show


@pytest.mark.parametrize("deck", load_set(TEXT_DECKS), ids=lambda d: d.id)
def test_every_good_text_deck_passes_and_every_bad_one_fails_with_its_codes(deck: LabelledDeck, tmp_path: Path) -> None:
    report = read(deck, build_pdf(deck, tmp_path / "deck.pdf")).report
    assert set(report.failed) == deck.codes, report.reasons()


@pytest.mark.chromium
@session_loop
@pytest.mark.parametrize("deck", load_set(PAGE_DECKS), ids=lambda d: d.id)
async def test_every_page_deck_reads_right_from_its_layout_and_from_its_pdf(
    deck: LabelledDeck, page_decks: dict[str, Path]
) -> None:
    for reading in read_page_deck(deck, page_decks[deck.id]):
        assert set(reading.report.failed) == reading.expected, (reading.source, reading.report.reasons())


def test_the_set_is_split_once_and_covers_every_check_in_both_parts(tmp_path: Path) -> None:
    core = load_set(CORE)
    for part in PARTS:
        decks = [d for d in core if d.part == part]
        assert all(any(code in d.codes for d in decks) for code in CODES), part  # each check has bad decks in each part
        assert {d.lang for d in decks if d.codes} == {d.lang for d in decks if not d.codes} == {"en", "zh"}, part
    assert 0.25 <= sum(d.part == "test" for d in core) / len(core) <= 0.4  # about 2:1
    kept_back = [d for d in load_set(PAGE_DECKS, part="test") if not d.codes]
    shown = {key for d in kept_back for slide in d.slides for piece in (slide, *slide.get("row", ())) for key in piece}
    assert set(SHOWN_IN_TEST_PART) <= shown and all(d.furniture.get("number") for d in kept_back)
    hard = [read(d, build_pdf(d, tmp_path / f"{d.id}.pdf")) for d in load_set(HARD)]
    missed = {code: fn for code, (_, _, fn) in figures(hard).items() if fn}
    assert missed  # what rules cannot see (a cut without a mark, a paraphrased duplicate, ...): reported, not hidden


def slides(*specs: tuple[str, ...]) -> list[SlideText]:
    return [SlideText(n, spec[0], tuple(spec[1:])) for n, spec in enumerate(specs, start=1)]


def test_a_bare_title_slide_is_fine_but_a_bare_content_slide_is_not() -> None:
    bare_title = slides(("Tides",), ("Why tides happen", "The moon's gravity pulls the oceans toward it."))
    assert check_content(bare_title, CFG).passed
    bare_content = slides(("Tides", "A short guide"), ("Why tides happen",))
    assert check_content(bare_content, CFG).failed == ["empty_slides"]


def test_a_summary_in_other_words_is_not_repetition_but_a_copied_bullet_is() -> None:
    body = ("How it works", "Solar panels turn sunlight into direct current.", "An inverter converts it for the grid.")
    restated = slides(("Solar power",), body, ("Summary", "Panels make electricity from light, and inverters adapt it."))
    copied = slides(("Solar power",), body, ("Summary", "Solar panels turn sunlight into direct current."))
    assert check_content(restated, CFG).passed
    assert check_content(copied, CFG).failed == ["repeated_text"]


def test_english_terms_in_chinese_sentences_are_chinese_text() -> None:
    deck = slides(
        ("Transformer 简介",),
        ("核心机制", "Transformer 使用 self-attention 和 multi-head attention 机制。", "在 WMT 2014 上评估 BLEU 分数。"),
    )
    assert check_content(deck, CFG, "zh").passed
    english = slides(("Transformer 简介",), ("Background", "The Transformer uses self-attention instead of recurrence."))
    assert check_content(english, CFG, "zh").failed == ["language_mix"]


def test_quoted_titles_of_the_request_are_not_an_echo() -> None:
    request = (
        'Please present the attached paper, "Neural Machine Translation by Jointly Learning to Align and Translate", to my lab.'
    )
    deck = slides(
        ("Neural Machine Translation by Jointly Learning to Align and Translate", "A lab seminar"),
        ("Idea", "The decoder searches the source sentence for the words it needs."),
    )
    assert check_content(deck, CFG, "en", request).passed
    pasted = slides(
        ("Talk", "Please present the attached paper to my lab and explain its method in detail."), ("Idea", "It aligns.")
    )
    assert check_content(
        pasted, CFG, "en", "Please present the attached paper to my lab and explain its method in detail, thanks."
    ).failed == ["request_echo"]


def test_thresholds_come_from_the_config() -> None:
    near = slides(
        ("Deck",),
        ("A", "one two three four five six seven eight nine ten"),
        ("B", "one two three four five six seven eight nine eleven"),
    )
    assert "duplicate_slides" in check_content(near, CFG).failed
    assert "duplicate_slides" not in check_content(near, FiltersConfig(content_duplicate_similarity=0.95)).failed


def block(text: str, y: float, size: float, role: str = "prose") -> Block:
    return Block(text, (0.1, y, 0.5, 0.05), size, role)


def title_and_page_number(number_role: str) -> list[Page]:
    """A title slide, a slide of prose, and a slide with a heading and a page number at its bottom edge."""
    return [
        Page(1, (block("Tides", 0.4, 60, "heading"),)),
        Page(
            2,
            (
                block("Why tides happen", 0.08, 40, "heading"),
                block("The moon pulls the oceans.", 0.3, 24),
                block("2", 0.94, 12, number_role),
            ),
        ),
        Page(3, (block("Spring tides", 0.08, 40, "heading"), block("3", 0.94, 12, number_role))),
    ]


def test_a_slide_with_a_title_and_a_page_number_is_empty_read_either_way(tmp_path: Path) -> None:
    for role in ("furniture", "prose"):  # the layout's footer names it; a bare number at the edge is one anyway
        assert check_content(slides_of(title_and_page_number(role)), CFG).failed == ["empty_slides"]
    doc = pymupdf.open()
    for heading, body in (("Tides", ""), ("Why tides happen", "The moon pulls the oceans toward it."), ("Spring tides", "")):
        page = doc.new_page(width=960, height=540)
        page.insert_text((50, 70), heading, fontsize=30)
        if body:
            page.insert_text((50, 160), body, fontsize=16)
        page.insert_text((900, 520), str(doc.page_count), fontsize=10)
    doc.save(tmp_path / "deck.pdf")
    report = check_deck(tmp_path / "deck.pdf", CFG)
    assert report.failed == ["empty_slides"] and report.checks["empty_slides"].slides == (3,)


def test_a_section_divider_introduces_content_and_a_closing_slide_ends_the_deck() -> None:
    content = ("Findings", "Most customers found us through friends.")
    dividers = slides(
        ("Survey",), ("Part 1: Findings",), content, ("Part 2: Changes",), ("Changes", "We will answer faster."), ("Thank you",)
    )
    assert check_content(dividers, CFG).passed
    back_to_back = slides(("Survey",), ("Part 1: Findings",), ("Part 2: Changes",), content, ("Market",), ("Next", "We grow."))
    assert check_content(back_to_back, CFG).checks["empty_slides"].slides == (2, 5)


def test_a_heading_alone_mid_slide_is_a_divider_but_one_at_the_top_is_an_empty_slide() -> None:
    def deck(divider_y: float) -> list[Page]:
        content = (block("Conversion", 0.08, 40, "heading"), block("Conversion rose in every pilot store.", 0.3, 24))
        return [
            Page(1, (block("The pilot", 0.4, 60, "heading"),)),
            Page(2, (block("Results", divider_y, 54, "heading"),)),
            Page(3, content),
        ]

    assert check_content(slides_of(deck(0.45)), CFG).passed
    assert check_content(slides_of(deck(0.08)), CFG).checks["empty_slides"].slides == (2,)


def test_an_agenda_shown_before_each_part_is_said_once_but_one_copied_in_a_row_or_at_the_end_is_a_duplicate() -> None:
    agenda = ("Agenda", "Why we ran the trial", "What the counters measured on the new lanes")
    why, counts = ("Why", "Cyclists asked for safer streets."), ("Counts", "Three thousand cyclists a day.")
    assert check_content(slides(("Trial",), agenda, why, agenda, counts), CFG).passed
    in_a_row = check_content(slides(("Trial",), agenda, agenda, why, counts), CFG)
    at_the_end = check_content(slides(("Trial",), agenda, why, counts, agenda), CFG)
    assert in_a_row.failed == at_the_end.failed == ["duplicate_slides", "repeated_text"]


def test_tables_code_and_figures_are_content_but_not_prose() -> None:
    chart = ("0.00", "0.04", "0.00", "0.04", "the", "was")
    deck = [
        SlideText(1, "Word frequencies", ()),
        SlideText(2, "Fiction and news", (), figures=chart),
        SlideText(3, "The code", ("A loop that never ends.",), figures=("while True:", "    pass  # TODO")),
    ]
    assert check_content(deck, CFG).passed
    header = ("Model", "Accuracy", "Latency")
    tables = [
        SlideText(1, "Results", (), figures=(*header, "ResNet", "81.2", "6.1")),
        SlideText(2, "Results", (), figures=(*header, "ViT", "74.8", "10.2")),
    ]
    assert check_content(tables, CFG).passed  # the same header row, different tables
    assert check_content([tables[0], replace(tables[0], number=2)], CFG).failed == ["duplicate_slides"]


def test_the_gate_reads_the_layout_the_rollout_recorded(tmp_path: Path) -> None:
    rollout = candidate(tmp_path, RolloutSpec("en-169-ok", slides=3))
    assert asyncio.run(ContentGate(CFG).judge(rollout)).passed  # its PDF
    layout = [
        [("Tides", 300, 58, "heading")],
        [("Why tides happen", 48, 40, "heading"), ("The moon pulls the oceans.", 200, 23, "prose")],
        [("Spring tides", 48, 40, "heading"), ("3", 680, 14, "furniture")],
    ]
    slides_json = [
        {
            "file": f"slide_0{n}.html",
            "size": [1280, 720],
            "pictures": [],
            "blocks": [{"text": text, "box": [80, y, 600, 40], "size": size, "role": role} for text, y, size, role in blocks],
        }
        for n, blocks in enumerate(layout, start=1)
    ]
    (tmp_path / "deck_text.json").write_text(json.dumps({"slides": slides_json}))
    recorded = replace(rollout.rollout, artifacts={**rollout.rollout.artifacts, DECK_TEXT: "deck_text.json"})
    verdict = asyncio.run(ContentGate(CFG).judge(replace(rollout, rollout=recorded)))
    assert verdict.category == "empty_slides" and "slide 3" in verdict.reasons[0]


# ---------------------------------------------------------------- the CLI contract


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "filters.content", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_cli_prints_passed_checks_and_reasons_and_exits_0_whatever_the_verdict(tmp_path: Path) -> None:
    bad = next(d for d in load_set(TEXT_DECKS) if d.id == "scripted-before-persona-00000")
    pdf = build_pdf(bad, tmp_path / "deck.pdf")
    done = cli(str(pdf), "--lang", "zh", "--request", bad.request, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"passed", "checks", "reasons"} and result["passed"] is False
    assert list(result["checks"]) == list(CODES) and all(set(c) == {"ok", "detail"} for c in result["checks"].values())
    assert {code for code, c in result["checks"].items() if not c["ok"]} == bad.codes
    assert [r.split(":")[0] for r in result["reasons"]] == [code for code in CODES if code in bad.codes]
    good = next(d for d in load_set(TEXT_DECKS) if d.id == "good-en-attention")
    done = cli(str(build_pdf(good, tmp_path / "good.pdf")), "--lang", "en", "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {**json.loads(done.stdout), "passed": True, "reasons": []}
    human = cli(str(pdf), "--lang", "zh")
    assert human.returncode == 0 and "FAIL  duplicate_slides" in human.stdout


@pytest.mark.parametrize("setup", ["missing", "not-a-pdf", "empty", "bad-lang", "bad-layout"])
def test_cli_refuses_unreadable_input_with_exit_2_and_one_line(setup: str, tmp_path: Path) -> None:
    path = tmp_path / "deck.pdf"
    if setup == "not-a-pdf":
        path.write_text("hello")
    elif setup == "empty":
        path.write_bytes(b"")
    elif setup in ("bad-lang", "bad-layout"):
        build_pdf(load_set(TEXT_DECKS)[0], path)
        (tmp_path / "deck_text.json").write_text('{"slides": [{"file": "slide_01.html", "error": "text not read"}]}')
    extra = {"bad-lang": ["--lang", "fr"], "bad-layout": ["--layout", str(tmp_path / "deck_text.json")]}.get(setup, [])
    done = cli(str(path), "--json", *extra)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m filters.content: error: ")
