"""Constraint scoring on decks with known violations; decks that did not render; the aggregates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.llm.players import Players
from core.records import Rollout
from eval.config import JudgeConfig
from eval.metrics import DeckScore, aggregate, by_domain, constraint_score
from eval.scoring import score_deck
from eval.slide_judge import build_judging
from fakes.decks import PAGE_SIZES, uniform_deck, write_deck
from tests.eval.helpers import CHINESE, ENGLISH, export_workspace, task


@pytest.mark.parametrize(
    ("shape", "pages", "text", "kwargs", "expected", "failed"),
    [
        ("16:9", 3, ENGLISH, {"slides": 3, "aspect": "16:9", "explicit_language": "en"}, 5.0, ""),
        (
            "16:9",
            3,
            ENGLISH,
            {"slides": 5, "aspect": "16:9", "explicit_language": "en"},
            5 * 2 / 3,
            "slide count: expected 5, got 3",
        ),
        ("16:9", 2, ENGLISH, {"slides": 2, "aspect": "4:3", "explicit_language": "zh"}, 5 / 3, "aspect ratio: expected 4:3"),
        ("A2", 1, CHINESE, {"slides": 1, "aspect": "A1", "explicit_language": "zh", "language": "zh"}, 5.0, ""),
        # no explicit constraint: the deck's language is still checked against the task's own language
        ("4:3", 2, ENGLISH, {"language": "zh"}, 0.0, "language: expected zh, got en"),
        ("4:3", 2, CHINESE, {"language": "zh"}, 5.0, ""),
    ],
)
def test_constraint_score_is_the_fraction_met_times_five(tmp_path: Path, shape, pages, text, kwargs, expected, failed) -> None:
    pdf = uniform_deck(tmp_path / "deck.pdf", shape, pages, text)
    score, reasons = constraint_score(pdf, task("t", **kwargs))
    assert score == pytest.approx(expected)
    assert reasons.startswith(failed)


def test_mixed_page_sizes_fail_the_aspect_check(tmp_path: Path) -> None:
    pdf = write_deck(tmp_path / "deck.pdf", [PAGE_SIZES["16:9"], PAGE_SIZES["4:3"]], [ENGLISH, ENGLISH])
    score, reasons = constraint_score(pdf, task("t", slides=2, aspect="16:9", explicit_language="en"))
    assert score == pytest.approx(5 * 2 / 3) and "mixed" in reasons


def _score(root: Path, t, rollout: Rollout | None) -> DeckScore:
    async def go() -> DeckScore:
        async with Players() as players:
            judging = build_judging(JudgeConfig(), root / "cache", players)
            return (await score_deck(t, rollout, root, judging, root / "pages")).score

    return asyncio.run(go())


def test_a_rendered_deck_gets_all_three_scores(tmp_path: Path) -> None:
    rollout = export_workspace(
        tmp_path,
        "ok",
        "16:9",
        [ENGLISH, ENGLISH],
        defects={2: [{"code": "overlap", "severity": "critical", "element": "img", "detail": "x"}]},
    )
    score = _score(tmp_path, task("ok", slides=2, aspect="16:9"), rollout)
    assert (score.rendered, score.slides, score.constraint, score.failure) == (True, 2, 5.0, None)
    assert 1 <= score.style < score.content <= 5  # the measured overlap costs slide 2 its style
    assert score.cost_usd == 0.02 and score.tokens == 1000


@pytest.mark.parametrize(
    ("rollout", "failure"),
    [
        (None, "not generated"),
        (Rollout(task_id="t", status="failed", failure="environment/context_overflow"), "environment/context_overflow"),
        (
            Rollout(
                task_id="t", status="done", artifacts={"pdf": "rollouts/t/deck.pdf", "defects": "rollouts/t/deck_defects.json"}
            ),
            "environment/unreadable_deck",
        ),
    ],
)
def test_decks_that_did_not_render_score_the_minimum(tmp_path: Path, rollout: Rollout | None, failure: str) -> None:
    score = _score(tmp_path, task("t", slides=2), rollout)
    assert (score.rendered, score.constraint, score.content, score.style) == (False, 0.0, 1.0, 1.0)
    assert score.failure.startswith(failure) and score.avg == pytest.approx(2 / 3)


def test_aggregates_render_rate_unjudged_and_domains() -> None:
    def deck(
        task_id: str, source: str, rendered: bool, constraint: float, content: float | None, style: float | None
    ) -> DeckScore:
        return DeckScore(task_id, source, "en", rendered, 3, constraint, content, style, 0.1, 100)

    scores = [
        deck("a", "persona", True, 5.0, 4.0, 4.0),
        deck("b", "arxiv", True, 5.0, None, None),
        deck("c", "arxiv", False, 0.0, 1.0, 1.0),
        deck("d", "finepdfs", True, 2.5, 3.0, 5.0),
    ]
    metrics = aggregate(scores)
    assert (metrics.tasks, metrics.rendered, metrics.unjudged, metrics.render_rate) == (4, 3, 1, 0.75)
    assert metrics.constraint == pytest.approx(12.5 / 4)
    assert (metrics.content, metrics.style) == (pytest.approx(8 / 3), pytest.approx(10 / 3))  # the unjudged deck left out
    assert metrics.avg == pytest.approx((12.5 / 4 + 8 / 3 + 10 / 3) / 3)
    domains = by_domain(scores)
    assert list(domains) == ["PersonaHub", "arXiv", "FinePDFs"]
    assert (domains["arXiv"].tasks, domains["arXiv"].rendered, domains["arXiv"].content) == (2, 1, 1.0)
