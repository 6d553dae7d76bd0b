"""Agreement statistics on hand-worked cases, and `python -m eval.calibrate` on a small labelled set."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from eval.agreement import agreement, categories, cohen_kappa
from eval.calibrate import main
from fakes.decks import uniform_deck
from fakes.openai_server import FakeOpenAIServer
from tests.eval.helpers import ENGLISH, GOOD_DESCRIPTION, GOOD_SCORES, export_workspace, scripted_replies, slide_image


def test_perfect_and_reversed_raters() -> None:
    same = agreement([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert (same.n, same.spearman, same.exact, same.within_one, same.kappa, same.kappa_quadratic) == pytest.approx(
        (5, 1, 1, 1, 1, 1)
    )
    rev = agreement([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
    assert rev.spearman == pytest.approx(-1.0) and (rev.exact, rev.within_one) == (0.2, 0.2)
    assert rev.kappa == pytest.approx(0.0)  # agreement on 3-3 only, as often as chance
    assert rev.kappa_quadratic == pytest.approx(-1.0)


def test_kappa_by_hand() -> None:
    a, b = [1, 1, 2, 2, 3, 3, 4, 4], [1, 2, 2, 2, 3, 4, 4, 4]
    observed = 6 / 8
    chance = (2 / 8) * (1 / 8) + (2 / 8) * (3 / 8) + (2 / 8) * (1 / 8) + (2 / 8) * (3 / 8)
    assert cohen_kappa(a, b) == pytest.approx((observed - chance) / (1 - chance))
    assert agreement(a, b).spearman == pytest.approx(spearmanr(a, b).statistic)


def test_fractional_scores_round_half_up_and_missing_items_drop_out() -> None:
    assert list(categories([2.5, 3.49, 0.2, 6.0])) == [3, 3, 1, 5]
    found = agreement([2.5, 4.0, None, 1.0], [3, 4, 2, None])
    assert (found.n, found.exact) == (2, 1.0)
    assert agreement([None], [3]).n == 0
    constant = agreement([4, 4, 4], [1, 3, 5])
    assert constant.spearman is None and constant.kappa == pytest.approx(0.0)
    assert agreement([3, 3], [3, 3]).kappa is None  # one category for both: kappa is undefined


def write_labels(folder: Path) -> Path:
    uniform_deck(folder / "a.pdf", "16:9", 2, ENGLISH)
    export_workspace(folder, "b", "4:3", [ENGLISH])
    slide_image(folder / "c" / "slide_01.png", boxes=[(20, 20, 300, 160, "#1f4e79")])
    slide_image(folder / "c" / "slide_02.png")
    slide_image(folder / "d.png", boxes=[(20, 20, 300, 40, "#333333")])
    rows = [("a.pdf", 4, 3), ("rollouts/b", 4, 4), ("c", 2, 3), ("d.png", 3, 2)]
    labels = folder / "labels.csv"
    with labels.open("w", newline="") as fh:
        csv.writer(fh).writerows([("path", "content", "style"), *rows])
    return labels


def test_calibrate_against_labels_and_a_second_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = write_labels(tmp_path)
    with FakeOpenAIServer(scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES]), strict="openai") as srv:
        second = [
            "--second",
            "judge=openai",
            "--second",
            f"judge.endpoint.base_url={srv.url}",
            "--second",
            "judge.endpoint.model=fake",
        ]
        assert main([str(labels), *second]) == 0
        assert len(srv.requests) == 2 * 6  # describer + judge for each of the six slides
        assert srv.refused == []
    out = tmp_path / "labels_calibration"
    rows = list(csv.DictReader((out / "agreement.csv").open()))
    assert [(r["Raters"], r["Dimension"]) for r in rows] == [
        ("labels vs judge A (scripted-judge)", "content"),
        ("labels vs judge A (scripted-judge)", "style"),
        ("labels vs judge B (fake)", "content"),
        ("labels vs judge B (fake)", "style"),
        ("judge A (scripted-judge) vs judge B (fake)", "content"),
        ("judge A (scripted-judge) vs judge B (fake)", "style"),
    ]
    assert all(r["n"] == "4" for r in rows)
    assert rows[2]["spearman"] == "" and rows[2]["exact"] == "0.5"  # judge B says 4 for everything: labels 4, 4, 2, 3
    scores = list(csv.DictReader((out / "scores.csv").open()))
    assert len(scores) == 4 and scores[0]["judge B (fake):content"] == "4.0"
    assert "Judge calibration" in capsys.readouterr().out
    assert (out / "agreement.md").is_file()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("path,content\nx.pdf,3\n", "missing column"),
        ("path,content,style\nx.pdf,3,9\n", "1-5"),
        ("path,content,style\nnowhere.pdf,3,3\n", "nowhere.pdf"),
        ("path,content,style\n", "no labelled rows"),
    ],
)
def test_calibrate_refuses_bad_labels_before_any_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text(content)
    with FakeOpenAIServer(scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES]), strict="openai") as srv:
        assert main([str(labels), "judge=openai", f"judge.endpoint.base_url={srv.url}"]) == 2
        assert srv.requests == []
    assert message in capsys.readouterr().err
