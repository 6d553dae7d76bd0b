"""PresentBench's layout read into Tasks with checklists, scored and summarised (on the synthetic sample)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.config import ConfigError
from core.records import Check, Constraints
from eval.checklist.score import ClassScore
from eval.presentbench import BenchCase, read_cases, score_case, summary_table
from fakes.openai_server import FakeOpenAIServer
from tests.eval.helpers import GOOD_DESCRIPTION, GOOD_SCORES, answering, eval_run, is_checklist, scripted_replies

SAMPLE = Path(__file__).parent / "presentbench_sample"
LESSONS = SAMPLE / "education" / "sample_lessons"
MI = "Looking only at the slides: "
MD = "Comparing the slides with the source material: "


@pytest.fixture(scope="module")
def cases() -> list[BenchCase]:
    return read_cases(SAMPLE)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the sample to break."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "data"))


def answers(case: BenchCase, given: dict[str, str], default: str = "yes") -> dict[str, str]:
    return {c.check_id: given.get(c.check_id, default) for c in case.task.checklist}


def test_the_sample_reads_as_two_cases_with_merged_checklists(cases: list[BenchCase]):
    assert [c.case_id for c in cases] == ["education/sample_lessons/01", "education/sample_lessons/02"]
    first = cases[0]
    assert first.domain == "education"
    assert first.weights == {
        "fundamentals": 20.0,
        "visual_design": 20.0,
        "completeness": 20.0,
        "correctness": 20.0,
        "fidelity": 20.0,
    }
    assert first.total is None
    task = first.task
    assert task.task_id == "education__sample_lessons__01"
    assert (task.source, task.language) == ("presentbench", "en")
    assert task.instruction.endswith("The slide deck must have 4-6 slides.")
    assert task.attachments == (str((LESSONS / "01" / "material.md").resolve()),)
    assert task.constraints == Constraints(slides_min=4, slides_max=6)
    assert task.provenance == {"benchmark": "PresentBench", "case": "education/sample_lessons/01"}
    assert task.checklist_by == "PresentBench judge_prompt.json (education/sample_lessons/01)"
    ids = [c.check_id for c in task.checklist]
    assert ids == [
        *("MI1.1", "MI1.2", "MI1.3", "MI1.4", "MI2.1", "MI2.2", "MD1.1", "MD1.2", "MD2.1", "MD2.2"),
        *(f"MD3.{i}" for i in range(1, 7)),
    ]
    by_id = {c.check_id: c for c in task.checklist}
    assert by_id["MI1.1"] == Check("MI1.1", "fundamentals", "The deck has between 4 and 6 slides.", "slides:4-6")
    assert by_id["MI1.2"] == Check("MI1.2", "fundamentals", MI + "Is the deck written in English?")
    assert by_id["MI2.1"].cls == "visual_design"
    assert by_id["MD1.2"] == Check(
        "MD1.2", "completeness", MD + "Does the deck say that about 97% of Earth's water is in the oceans?"
    )
    assert by_id["MD2.1"].cls == "correctness"
    assert by_id["MD3.6"] == Check("MD3.6", "fidelity", MD + "Is slide 6 faithful to the source?")
    second = cases[1].task
    assert [c.check_id for c in second.checklist if c.check_id.startswith("MI")] == ids[:6]  # the domain's lists
    assert [c.check_id for c in second.checklist if c.check_id.startswith("MD")] == [
        *("MD1.1", "MD1.2", "MD2.1"),
        *(f"MD3.{i}" for i in range(1, 5)),
    ]


def test_a_case_key_replaces_the_domains_whole(copy: Path):
    prompt = copy / "education" / "sample_lessons" / "02" / "generation_task" / "judge_prompt.json"
    data = json.loads(prompt.read_text()) | {"material_independent_checklist_1": ["Is there a title slide?"]}
    prompt.write_text(json.dumps(data))
    first, second = read_cases(copy)
    fundamentals = [c for c in second.task.checklist if c.cls == "fundamentals"]
    assert fundamentals == [Check("MI1.1", "fundamentals", MI + "Is there a title slide?")]
    assert second.task.constraints == Constraints()
    assert len([c for c in first.task.checklist if c.cls == "fundamentals"]) == 4


def test_scores_match_a_hand_computation(cases: list[BenchCase]):
    first, second = cases
    # Case 01, a deck of 4 slides: MD3.5 and MD3.6 are about slides it does not have and are dropped.
    given = {"MI1.3": "no", "MI1.4": "not_applicable", "MD1.2": "no", "MD2.1": "not_applicable"}
    given |= {"MD2.2": "not_applicable", "MD3.4": "no", "MD3.5": "no", "MD3.6": "no"}
    score = score_case(first, answers(first, given), slides=4)
    assert score.classes == {
        "fundamentals": ClassScore(2, 1, 1, 20 * 2 / 3),  # yes, yes, no, n/a
        "visual_design": ClassScore(2, 0, 0, 20.0),
        "completeness": ClassScore(1, 1, 0, 10.0),
        "correctness": ClassScore(0, 0, 2, None),  # nothing to score: its weight leaves the denominator
        "fidelity": ClassScore(3, 1, 0, 15.0),  # MD3.1-4 only
    }
    # (13.333 + 20 + 10 + 15) / (20 * 4) x 100
    assert score.percent == pytest.approx((40 / 3 + 20 + 10 + 15) / 80 * 100)
    assert score.percent == pytest.approx(72.9166667)
    # Case 02, a deck of 5 slides (all 4 fidelity items kept): one no in visual design.
    other = score_case(second, answers(second, {"MI2.2": "no"}), slides=5)
    assert other.classes["visual_design"] == ClassScore(1, 1, 0, 10.0)
    assert other.classes["fidelity"] == ClassScore(4, 0, 0, 20.0)
    assert other.percent == pytest.approx(90.0)


def test_the_total_divides_only_when_every_class_is_scored(copy: Path):
    weights = copy / "education" / "judge_weights.yaml"
    weights.write_text(weights.read_text() + "total: 200\n")
    first, second = read_cases(copy)
    assert second.total == 200.0
    assert score_case(second, answers(second, {}), slides=4).percent == pytest.approx(50.0)
    unscored = {c.check_id: "not_applicable" for c in first.task.checklist if c.cls == "correctness"}
    assert score_case(first, answers(first, unscored), slides=6).percent == pytest.approx(100.0)


def test_answers_must_cover_the_kept_checks(cases: list[BenchCase]):
    first = cases[0]
    kept = {k: v for k, v in answers(first, {}).items() if k not in ("MD3.5", "MD3.6")}
    assert score_case(first, kept, slides=4).percent == pytest.approx(100.0)
    with pytest.raises(ValueError, match="no answer for check MD3.5"):
        score_case(first, kept, slides=5)
    with pytest.raises(ValueError, match="MI1.2 answered 'maybe'"):
        score_case(first, answers(first, {"MI1.2": "maybe"}), slides=4)
    with pytest.raises(ValueError, match="MD9.1"):
        score_case(first, answers(first, {}) | {"MD9.1": "yes"}, slides=4)


def test_the_summary_table_is_their_printed_one(cases: list[BenchCase]):
    first, second = cases
    given = {"MI1.3": "no", "MI1.4": "not_applicable", "MD1.2": "no", "MD2.1": "not_applicable"}
    given |= {"MD2.2": "not_applicable", "MD3.4": "no", "MD3.5": "no", "MD3.6": "no"}
    scores = [
        score_case(first, answers(first, given), slides=4),  # 72.916667
        score_case(second, answers(second, {"MI2.2": "no"}), slides=5),  # 90.0
    ]
    assert summary_table(scores) == (
        "Type             Total    academia advertising   education   economics        talk\n"
        "----------------------------------------------------------------------------------\n"
        "Arithmetic     81.4583         N/A         N/A     81.4583         N/A         N/A\n"
    )


def test_a_root_without_cases_is_refused(tmp_path: Path):
    (tmp_path / "education").mkdir()
    with pytest.raises(ConfigError, match=f"{tmp_path}: no PresentBench case found; expected <domain>/<source>/<case>"):
        read_cases(tmp_path)


def test_an_unknown_code_judged_check_is_refused(copy: Path):
    common = copy / "education" / "common_judge_prompt.json"
    data = json.loads(common.read_text())
    data["material_independent_checklist_1"][0]["func"] = "utils.count_words.check_word_count"
    common.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=f"{common}: .*unknown code-judged check 'utils.count_words.check_word_count'"):
        read_cases(copy)


def test_a_missing_weights_file_is_refused(copy: Path):
    weights = copy / "education" / "judge_weights.yaml"
    weights.unlink()
    with pytest.raises(ConfigError, match=f"{weights}: missing"):
        read_cases(copy)


@pytest.mark.chromium
@pytest.mark.slow
def test_eval_run_scores_the_sample_cases_with_their_own_checklists(tmp_path: Path) -> None:
    """`eval.run tasks=presentbench:...`, the decks by the scripted policy, the checks by a model judge (the fake
    server) that answers no to three of them: each case's score and PresentBench's table, computed by hand."""
    slide_judge = scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES])
    checklist_judge = answering({"MI2.1", "MD1.2", "MD2.1"})
    with FakeOpenAIServer(lambda body: (checklist_judge if is_checklist(body) else slide_judge)(body), model="fake-judge") as srv:
        judge = ["judge=openai", f"judge.endpoint.base_url={srv.url}", "judge.endpoint.model=fake-judge"]
        eval_run(tmp_path, f"tasks=presentbench:{SAMPLE}", f"run.dir={tmp_path / 'run'}", *judge)
    results = {d["task_id"]: d for d in json.loads((tmp_path / "run" / "scores" / "checklist.json").read_text())["decks"]}
    # fundamentals 4/4 yes: 20; visual design 1 of 2: 10; completeness 1 of 2: 10; fidelity all yes: 20
    # correctness: case 01 has two checks, one answered no (10); case 02 has one, answered no (0)
    case_01, case_02 = results["education__sample_lessons__01"], results["education__sample_lessons__02"]
    assert case_01["percent"] == pytest.approx((20 + 10 + 10 + 10 + 20) / 100 * 100)
    assert case_02["percent"] == pytest.approx((20 + 10 + 10 + 0 + 20) / 100 * 100)
    assert {a["check_id"] for a in case_01["answers"]} >= {"MI1.1", "MI1.4", "MI2.2", "MD1.2", "MD2.2", "MD3.1"}
    expected = "Arithmetic".ljust(10) + "".join(f"{v:>12}" for v in ("65.0000", "N/A", "N/A", "65.0000", "N/A", "N/A"))
    assert (tmp_path / "run" / "scores" / "presentbench.txt").read_text().splitlines()[-1] == expected
    failed = (tmp_path / "run" / "report" / "report.md").read_text().split("**Failed checks**")[1]
    assert "- education__sample_lessons__02 (60.0%):" in failed
    assert "  - MD2.1 (correctness): Comparing the slides with the source material: Does the deck split" in failed
    assert failed.count("— seen") == 6  # three per case, each with the judge's reason
