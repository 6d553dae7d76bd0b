"""Shared assets of the filter tests: the real documents in ../shared/data/."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def shared_pdfs() -> list[dict[str, str]]:
    """MANIFEST.tsv rows of the bundled PDFs: file, pages, page_size_pt, language, ..."""
    with (SHARED_DATA / "MANIFEST.tsv").open(encoding="utf-8") as fh:
        return [row for row in csv.DictReader(fh, delimiter="\t") if row["file"].endswith(".pdf")]


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"{SHARED_DATA} is missing: the shared documents are part of the test assets")
    return SHARED_DATA
