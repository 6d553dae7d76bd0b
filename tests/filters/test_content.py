"""The content gate: its labelled set, its checks on their own, and its CLI contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from filters.config import FiltersConfig
from filters.content import CODES, SlideText, check_content
from tests.filters.content_set import CORE, HARD, LabelledDeck, build_pdf, figures, judge, load_set

REPO = Path(__file__).resolve().parents[2]
CFG = FiltersConfig()


@pytest.mark.parametrize("deck", load_set(CORE), ids=lambda d: d.id)
def test_every_good_deck_passes_and_every_bad_deck_fails_with_its_codes(deck: LabelledDeck, tmp_path: Path) -> None:
    report = judge(deck, tmp_path)
    assert set(report.failed) == deck.codes, report.reasons()


def test_the_set_covers_every_check_and_the_hard_cases_are_measured(tmp_path: Path) -> None:
    core = load_set(CORE)
    assert all(sum(code in d.codes for d in core) >= 3 for code in CODES)  # each check has bad decks to catch
    assert sum(not d.codes for d in core) >= 10 and {d.lang for d in core if not d.codes} == {"en", "zh"}
    hard = [(d, judge(d, tmp_path)) for d in load_set(HARD)]
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


# ---------------------------------------------------------------- the CLI contract


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "filters.content", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_cli_prints_passed_checks_and_reasons_and_exits_0_whatever_the_verdict(tmp_path: Path) -> None:
    bad = next(d for d in load_set(CORE) if d.id == "scripted-before-persona-00000")
    pdf = build_pdf(bad, tmp_path / "deck.pdf")
    done = cli(str(pdf), "--lang", "zh", "--request", bad.request, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"passed", "checks", "reasons"} and result["passed"] is False
    assert list(result["checks"]) == list(CODES) and all(set(c) == {"ok", "detail"} for c in result["checks"].values())
    assert {code for code, c in result["checks"].items() if not c["ok"]} == bad.codes
    assert [r.split(":")[0] for r in result["reasons"]] == [code for code in CODES if code in bad.codes]
    good = next(d for d in load_set(CORE) if d.id == "good-en-attention")
    done = cli(str(build_pdf(good, tmp_path / "good.pdf")), "--lang", "en", "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {**json.loads(done.stdout), "passed": True, "reasons": []}
    human = cli(str(pdf), "--lang", "zh")
    assert human.returncode == 0 and "FAIL  duplicate_slides" in human.stdout


@pytest.mark.parametrize("setup", ["missing", "not-a-pdf", "empty", "bad-lang"])
def test_cli_refuses_unreadable_input_with_exit_2_and_one_line(setup: str, tmp_path: Path) -> None:
    path = tmp_path / "deck.pdf"
    if setup == "not-a-pdf":
        path.write_text("hello")
    elif setup == "empty":
        path.write_bytes(b"")
    elif setup == "bad-lang":
        build_pdf(load_set(CORE)[0], path)
    done = cli(str(path), "--json", *(["--lang", "fr"] if setup == "bad-lang" else []))
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m filters.content: error: ")
