"""The command-line contract, driven as other checks drive it: by subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.pdf import pymupdf
from tests.rendered import FIXTURES, SLIDES

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy_slide(tmp_path: Path, name: str) -> Path:
    shutil.copytree(FIXTURES / "assets", tmp_path / "assets")
    (tmp_path / "slides").mkdir()
    return Path(shutil.copy(SLIDES / name, tmp_path / "slides" / name))


@pytest.mark.chromium
def test_slide_json(tmp_path: Path) -> None:
    slide = _copy_slide(tmp_path, "overlap_2_image_en.html")
    done = _run("agents.inspect", "slide", slide, "--aspect", "16:9", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert list(report) == ["file", "aspect", "width", "height", "png", "defects"]
    assert (report["file"], report["aspect"], report["width"], report["height"]) == (
        str(slide),
        "16:9",
        1280,
        720,
    )
    assert Path(report["png"]) == slide.with_suffix(".png") and slide.with_suffix(".png").is_file()
    assert {d["code"] for d in report["defects"]} == {"overlap"}
    assert all(list(d) == ["code", "severity", "element", "detail"] for d in report["defects"])


@pytest.mark.chromium
def test_slide_human_report_and_png_option(tmp_path: Path) -> None:
    slide = _copy_slide(tmp_path, "clean_image_text_en.html")  # ../assets resolve: slides/ implies its parent
    done = _run(
        "agents.inspect",
        "slide",
        slide,
        "--aspect",
        "16:9",
        "--png",
        tmp_path / "out" / "x.png",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "No defects measured."
    assert (tmp_path / "out" / "x.png").is_file() and not slide.with_suffix(".png").exists()


def test_manuscript_json(tmp_path: Path) -> None:
    md = tmp_path / "manuscript.md"
    md.write_text(
        "# 标题\n\n这是第一页的内容。\n\n---\n\n# 第二页\n\n![](https://example.com/a.png)\n",
        encoding="utf-8",
    )
    done = _run("agents.inspect", "manuscript", md, "--json", "--slides", "3-5", "--lang", "zh")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert list(report) == ["slides", "language", "issues"]
    assert (report["slides"], report["language"]) == (2, "zh")
    assert [(i["code"], i["slide"]) for i in report["issues"]] == [
        ("missing_alt", 2),
        ("external_url", 2),
        ("slide_count", None),
    ]
    human = _run("agents.inspect", "manuscript", md)
    assert human.returncode == 0 and "2 slides, language zh" in human.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("agents.inspect", "slide", "missing.html", "--aspect", "16:9"),
            "no such file",
        ),
        (
            ("agents.inspect", "slide", "pyproject.toml", "--aspect", "16:9"),
            "not an HTML file",
        ),
        (
            (
                "agents.inspect",
                "slide",
                SLIDES / "clean_title_en.html",
                "--aspect",
                "5:4",
            ),
            "unknown aspect",
        ),
        (("agents.inspect", "manuscript", "missing.md", "--json"), "no such file"),
        (
            ("agents.inspect", "manuscript", "README.md", "--slides", "many"),
            "expected N or MIN-MAX",
        ),
        (("agents.inspect", "slide", SLIDES / "clean_title_en.html"), "--aspect"),
        (
            ("agents.deck", "no/such/dir", "--aspect", "16:9", "--pdf", "x.pdf"),
            "not a folder",
        ),
        (
            ("agents.deck", SLIDES, "--aspect", "16:9", "--pdf", "x.pdf"),
            "no slide_NN.html",
        ),
        (
            ("agents.deck", SLIDES, "--aspect", "free", "--pdf", "x.pdf"),
            "unknown aspect",
        ),
    ],
)
def test_unusable_input_exits_2_with_one_line(args: tuple[str | Path, ...], message: str) -> None:
    done = _run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr


@pytest.mark.chromium
@pytest.mark.slow
def test_a_slide_that_hangs_exits_2_after_one_timeout(tmp_path: Path) -> None:
    hang = tmp_path / "hang.html"
    hang.write_text("<html><body><p>never</p><script>while (true) {}</script></body></html>")
    started = time.perf_counter()
    done = _run("agents.inspect", "slide", hang, "--aspect", "16:9", "--json", "--timeout", "3")
    assert time.perf_counter() - started < 3 + 12  # Python and Chromium start, one timeout, no retry
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(hang) in lines[0] and "3 s render timeout" in lines[0], done.stderr


@pytest.mark.chromium
def test_deck_cli(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "assets", tmp_path / "assets")
    (tmp_path / "slides").mkdir()
    for number, name in enumerate(["clean_title_zh.html", "clean_chart_svg_en.html"], start=1):
        shutil.copy(SLIDES / name, tmp_path / "slides" / f"slide_{number:02d}.html")
    done = _run(
        "agents.deck",
        tmp_path / "slides",
        "--aspect",
        "16:9",
        "--pdf",
        tmp_path / "deck.pdf",
        "--pptx",
        tmp_path / "deck.pptx",
        "--png-dir",
        tmp_path / "png",
    )
    assert done.returncode == 0, done.stderr
    assert "(2 pages)" in done.stdout
    with pymupdf.open(tmp_path / "deck.pdf") as pdf:
        assert pdf.page_count == 2 and pdf[0].rect.width == 960
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == [
        "slide_01.png",
        "slide_02.png",
    ]
    assert (tmp_path / "deck.pptx").stat().st_size > 10_000
