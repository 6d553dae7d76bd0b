"""The constraint gate on real PDFs: built decks and the bundled foreign documents."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.pdf import pymupdf
from core.records import Constraints, Verdict
from fakes.decks import CHINESE, CHINESE_WITH_ENGLISH_TERMS, ENGLISH, PAGE_SIZES, uniform_deck, write_deck
from filters.config import FiltersConfig
from filters.constraints import ConstraintCheck, UnusablePDF, check_deck, main
from tests.filters.helpers import SHARED_DATA, shared_pdfs

REPO = Path(__file__).resolve().parents[2]
CFG = FiltersConfig()
TEXTS = {"en": ENGLISH, "zh": CHINESE}


def exact(n: int, aspect: str | None = None, lang: str | None = None) -> Constraints:
    return Constraints(slides_min=n, slides_max=n, aspect_ratio=aspect, language=lang)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "filters.constraints", *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=60
    )


# ---------------------------------------------------------------- decks that meet their constraints


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("aspect", ["16:9", "4:3", "A1"])
def test_deck_meeting_every_constraint_passes(tmp_path: Path, aspect: str, lang: str) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", aspect, 6, TEXTS[lang])
    report = check_deck(pdf, exact(6, aspect, lang), CFG)
    assert report.checks == {
        "slide_count": ConstraintCheck(True, 6, 6),
        "aspect_ratio": ConstraintCheck(True, aspect, report.checks["aspect_ratio"].actual),
        "language": ConstraintCheck(True, lang, lang),
    }
    assert report.checks["aspect_ratio"].actual.startswith(aspect)
    assert report.score == 1.0
    verdict = report.to_verdict("t1")
    assert (verdict.gate, verdict.passed, verdict.category, verdict.reasons) == ("constraint", True, None, ())


@pytest.mark.parametrize(("asked", "shape"), [("A1", "A2"), ("A1", "A3"), ("A1", "A4"), ("A3", "A1")])
def test_iso_poster_sizes_share_one_shape(tmp_path: Path, asked: str, shape: str) -> None:
    report = check_deck(uniform_deck(tmp_path / "poster.pdf", shape, 1, ENGLISH), Constraints(aspect_ratio=asked), CFG)
    width, height = PAGE_SIZES[shape]
    assert report.checks["aspect_ratio"] == ConstraintCheck(True, asked, f"{shape} ({width:g}x{height:g} pt)")


def test_landscape_a1_is_not_a_poster(tmp_path: Path) -> None:
    width, height = PAGE_SIZES["A1"]
    pdf = write_deck(tmp_path / "landscape.pdf", [(height, width)], [ENGLISH])
    assert not check_deck(pdf, Constraints(aspect_ratio="A1"), CFG).checks["aspect_ratio"].ok


# ---------------------------------------------------------------- slide count


def test_wrong_slide_count_fails_with_a_reason(tmp_path: Path) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", "16:9", 5, ENGLISH)
    report = check_deck(pdf, exact(8, "16:9", "en"), CFG)
    assert report.checks["slide_count"] == ConstraintCheck(False, 8, 5)
    assert report.score == pytest.approx(2 / 3)
    verdict = report.to_verdict("t2")
    assert Verdict.from_json(verdict.to_json()) == verdict
    assert (verdict.passed, verdict.category, verdict.score) == (False, "constraint", pytest.approx(2 / 3))
    assert verdict.reasons == ("slide count: expected 8, got 5",)


@pytest.mark.parametrize(("pages", "ok"), [(10, False), (11, True), (15, True), (20, True), (21, False)])
def test_slide_range_is_inclusive(tmp_path: Path, pages: int, ok: bool) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", "4:3", pages, CHINESE)
    report = check_deck(pdf, Constraints(slides_min=11, slides_max=20), CFG)
    assert report.checks == {"slide_count": ConstraintCheck(ok, "11-20", pages)}


# ---------------------------------------------------------------- aspect ratio


def test_one_page_of_another_size_fails_naming_it(tmp_path: Path) -> None:
    sizes = [PAGE_SIZES["16:9"]] * 2 + [PAGE_SIZES["4:3"]] + [PAGE_SIZES["16:9"]] * 2
    pdf = write_deck(tmp_path / "deck.pdf", sizes, [ENGLISH] * 5)
    report = check_deck(pdf, exact(5, "16:9", "en"), CFG)
    check = report.checks["aspect_ratio"]
    assert check == ConstraintCheck(False, "16:9", "mixed: 16:9 (960x540 pt) on pages 1-2, 4-5; 4:3 (960x720 pt) on page 3")
    assert report.to_verdict("t3").reasons == (f"aspect ratio: expected 16:9, got {check.actual}",)


def test_aspect_tolerance_comes_from_config(tmp_path: Path) -> None:
    pdf = write_deck(tmp_path / "deck.pdf", [(975.0, 540.0)], [ENGLISH])  # 1.6% wider than 16:9
    assert check_deck(pdf, Constraints(aspect_ratio="16:9"), CFG).checks["aspect_ratio"].ok
    strict = FiltersConfig(aspect_tolerance=0.01)
    assert not check_deck(pdf, Constraints(aspect_ratio="16:9"), strict).checks["aspect_ratio"].ok


# ---------------------------------------------------------------- language


def test_english_terms_in_chinese_slides_are_judged_chinese(tmp_path: Path) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", "16:9", 4, CHINESE_WITH_ENGLISH_TERMS)
    assert check_deck(pdf, Constraints(language="zh"), CFG).checks["language"] == ConstraintCheck(True, "zh", "zh")
    assert check_deck(pdf, Constraints(language="en"), CFG).checks["language"] == ConstraintCheck(False, "en", "zh")


def test_mixed_deck_is_judged_by_its_dominant_language_and_the_threshold(tmp_path: Path) -> None:
    texts = [ENGLISH] * 4 + [CHINESE]  # Chinese slides in a mostly English deck
    pdf = write_deck(tmp_path / "deck.pdf", [PAGE_SIZES["16:9"]] * 5, texts)
    assert check_deck(pdf, Constraints(language="en"), CFG).checks["language"].ok
    low = FiltersConfig(language_threshold=0.2)  # CJK share here is about 0.35
    assert check_deck(pdf, Constraints(language="zh"), low).checks["language"] == ConstraintCheck(True, "zh", "zh")


def test_deck_without_text_has_no_language(tmp_path: Path) -> None:
    pdf = write_deck(tmp_path / "deck.pdf", [PAGE_SIZES["16:9"]], [""])
    assert check_deck(pdf, Constraints(language="en"), CFG).checks["language"] == ConstraintCheck(False, "en", "unknown")


# ---------------------------------------------------------------- score


def test_free_constraints_do_not_count(tmp_path: Path) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", "4:3", 3, ENGLISH)
    free = check_deck(pdf, Constraints(), CFG)
    assert (free.checks, free.score, free.to_verdict("t").passed) == ({}, 1.0, True)
    only_aspect = check_deck(pdf, Constraints(aspect_ratio="16:9"), CFG)
    assert list(only_aspect.checks) == ["aspect_ratio"] and only_aspect.score == 0.0


def test_min_constraint_score_decides_the_verdict(tmp_path: Path) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", "16:9", 3, ENGLISH)
    lenient = FiltersConfig(min_constraint_score=0.5)
    verdict = check_deck(pdf, exact(3, "4:3", "en"), lenient).to_verdict("t4")
    assert (verdict.passed, verdict.category, verdict.score) == (True, None, pytest.approx(2 / 3))
    assert verdict.reasons == ("aspect ratio: expected 4:3, got 16:9 (960x540 pt)",)


# ---------------------------------------------------------------- foreign PDFs (../shared/data)


@pytest.mark.parametrize("row", shared_pdfs(), ids=lambda row: row["file"])
def test_foreign_pdfs_report_their_true_count_size_and_language(shared_data: Path, row: dict[str, str]) -> None:
    other = "zh" if row["language"] == "en" else "en"
    report = check_deck(shared_data / row["file"], exact(1, "16:9", other), CFG)
    assert report.checks["slide_count"].actual == int(row["pages"])
    size = row["page_size_pt"]
    assert report.checks["aspect_ratio"].actual in {f"{size} pt", f"A4 ({size} pt)"}
    assert report.checks["language"].actual == row["language"]
    assert report.score == 0.0


# ---------------------------------------------------------------- unusable input


def encrypted_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page(width=960, height=540).insert_text((72, 72), ENGLISH[:40])
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    return path


def zero_page_pdf(path: Path) -> Path:  # PyMuPDF refuses to save one, so write it by hand
    path.write_bytes(
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
        b"trailer<</Root 1 0 R>>\n%%EOF\n"
    )
    return path


UNUSABLE = {
    "missing": (lambda tmp: tmp / "absent.pdf", "no such file"),
    "directory": (lambda tmp: tmp, "not a file"),
    "text named .pdf": (lambda tmp: _write(tmp / "notes.pdf", "just some notes"), "not a readable PDF"),
    "markdown": (lambda tmp: _write(tmp / "deck.md", "# Slide 1\n---\n# Slide 2"), "not a PDF"),
    "truncated": (lambda tmp: _write(tmp / "cut.pdf", "%PDF-1.7\n1 0 obj<<"), "not a readable PDF"),
    "encrypted": (lambda tmp: encrypted_pdf(tmp / "locked.pdf"), "encrypted"),
    "zero pages": (lambda tmp: zero_page_pdf(tmp / "empty.pdf"), "no pages"),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", UNUSABLE)
def test_unusable_pdf_is_an_environment_failure(tmp_path: Path, case: str) -> None:
    make, words = UNUSABLE[case]
    pdf = make(tmp_path)
    with pytest.raises(UnusablePDF, match=words) as caught:
        check_deck(pdf, exact(3, "16:9", "en"), CFG)
    assert str(pdf) in str(caught.value)
    verdict = caught.value.to_verdict("t5")
    assert (verdict.gate, verdict.passed, verdict.category, verdict.score) == ("constraint", False, "environment", 0.0)


# ---------------------------------------------------------------- CLI


def test_cli_arxiv_example() -> None:
    result = cli(SHARED_DATA / "arxiv_1706.03762.pdf", "--slides", "15", "--lang", "en", "--aspect", "16:9", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "checks": {
            "slide_count": {"ok": True, "expected": 15, "actual": 15},
            "aspect_ratio": {"ok": False, "expected": "16:9", "actual": "612x792 pt"},
            "language": {"ok": True, "expected": "en", "actual": "en"},
        },
        "score": pytest.approx(2 / 3),
    }


def test_cli_shows_only_the_checks_asked_for_and_a_human_report(tmp_path: Path) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", "A1", 2, CHINESE)
    asked = cli(pdf, "--slides-range", "1-3", "--aspect", "a1", "--json")
    assert json.loads(asked.stdout) == {
        "checks": {
            "slide_count": {"ok": True, "expected": "1-3", "actual": 2},
            "aspect_ratio": {"ok": True, "expected": "A1", "actual": "A1 (1683.8x2383.9 pt)"},
        },
        "score": 1.0,
    }
    human = cli(pdf, "--slides", "4", "--lang", "zh")
    assert human.returncode == 0
    assert human.stdout.splitlines() == [
        f"{pdf}: 2 pages, score 0.50 (1 of 2 checks met)",
        "  FAIL  slide count   expected 4, got 2",
        "  ok    language      expected zh, got zh",
    ]


def test_cli_unusable_file_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    files = {
        "no such file": tmp_path / "absent.pdf",
        "not a readable PDF": _write(tmp_path / "notes.pdf", "not a pdf"),
        "encrypted": encrypted_pdf(tmp_path / "locked.pdf"),
    }
    runs = {  # concurrently: each interpreter spends seconds importing pymupdf
        words: subprocess.Popen(
            [sys.executable, "-m", "filters.constraints", str(pdf), "--json"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for words, pdf in files.items()
    }
    for words, run in runs.items():
        stdout, stderr = run.communicate(timeout=60)
        assert run.returncode == 2 and stdout == ""
        assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr
        assert stderr.startswith(f"python -m filters.constraints: error: {files[words]}: {words}")


@pytest.mark.parametrize(
    "args",
    [
        ["--aspect", "5:1"],
        ["--slides-range", "9-3"],
        ["--slides", "0"],
        ["--slides", "3", "--slides-range", "1-3"],
        ["--lang", "English"],
    ],
    ids=["aspect-5:1", "range-9-3", "slides-0", "both-counts", "lang-word"],
)
def test_cli_bad_flag_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([str(SHARED_DATA / "arxiv_1706.03762.pdf"), *args])
    captured = capsys.readouterr()
    assert caught.value.code == 2 and captured.out == ""
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("python -m filters.constraints: error: argument --")
