"""`python -m agents.run`: one deck from the command line, offline with the scripted policy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.pdf import pymupdf

SHARED = Path(__file__).parents[3] / "shared" / "data"


@pytest.mark.chromium
def test_one_deck_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "deck"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.run",
            "Present the attached paper to my reading group",
            "--attach",
            str(SHARED / "arxiv_1409.0473.pdf"),
            "--slides",
            "4",
            "--aspect",
            "4:3",
            "--out",
            str(out),
            "llm=scripted",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "researcher step 1" in done.stderr and "presenter step 1" in done.stderr  # progress goes to stderr
    pdf = pymupdf.open(out / "deck.pdf")
    assert pdf.page_count == 4 and abs(pdf[0].rect.width / pdf[0].rect.height - 4 / 3) < 0.01
    assert (out / "trajectory_researcher.json").exists() and (out / "trajectory_presenter.json").exists()


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agents.run", "x", "--attach", str(tmp_path / "none.pdf")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "attachment not found" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "agents.run", "x", "llm=nope", "--out", str(tmp_path / "o")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "nope" in done.stderr and "Traceback" not in done.stderr
