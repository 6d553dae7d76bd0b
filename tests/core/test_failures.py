"""The failure table: every category the product stores is a row of it, and a stored failure reads back."""

from __future__ import annotations

import re

from core.config import PROJECT_ROOT
from core.failures import Failure, category_of

PRODUCT = ("core", "render", "deck", "agents", "critic", "filters", "pipeline", "eval", "train")
LITERAL = re.compile(r"""["'](?:environment|agent)/[a-z_]+""")


def test_no_failure_code_is_written_outside_the_table() -> None:
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}"
        for package in PRODUCT
        for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
        if path.name != "failures.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if LITERAL.search(line)
    ]
    assert not found, "failure codes belong in core/failures.py:\n" + "\n".join(found)


def test_a_stored_failure_reads_back_with_its_detail_left_out() -> None:
    assert category_of(Failure.model_error.detailed("rate_limit")) is Failure.model_error
    assert category_of("environment/unreadable_deck: no pages") is Failure.unreadable_deck
    assert category_of("agent/loop") is Failure.loop and Failure.loop.kind == "agent"
    assert category_of("environment/something_new") is None and category_of(None) is None
    assert Failure.worker_died.transient and not Failure.step_limit.transient


def test_every_row_says_what_it_means() -> None:
    assert all(f.kind in ("environment", "agent") and len(f.description) > 10 for f in Failure)
    assert len({f.value for f in Failure}) == len(Failure)
