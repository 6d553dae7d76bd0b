"""`python -m eval.run` end to end, offline: scripted policy on Ray, scripted judge, a tiny local encoder."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from core.records import Constraints, Task, read_parquet, write_parquet
from eval.report import main as report_main
from eval.summary import RunSummary
from fakes.openai_server import FakeOpenAIServer, Reply
from tests.eval.helpers import GOOD_DESCRIPTION, GOOD_SCORES, answering, eval_run, has_image, is_checklist, scripted_replies

TASKS = [
    Task(
        "persona-1",
        "persona",
        "A short talk on coral reefs for high-school students.",
        "en",
        constraints=Constraints(3, 3, "16:9", "en"),
    ),
    Task("finepdfs-1", "finepdfs", "Explain the attached notes.", "en", attachments=("/nonexistent/notes.pdf",)),  # cannot start
    Task("arxiv-1", "arxiv", "一次关于注意力机制的组会报告。", "zh", constraints=Constraints(aspect_ratio="4:3", language="zh")),
    Task("persona-2", "persona", "Beyond the limit.", "en"),
]


@pytest.mark.chromium
@pytest.mark.slow
def test_eval_run_offline_end_to_end(tmp_path: Path, tiny_encoder: Path) -> None:
    tasks = tmp_path / "eval.parquet"
    write_parquet([t for t in TASKS], tasks, Task)
    run = tmp_path / "eval-scripted"
    eval_run(tmp_path, f"tasks={tasks}", f"run.dir={run}", "limit=3", f"diversity.encoder={tiny_encoder}")

    assert [t.task_id for t in read_parquet(run / "tasks" / "eval.parquet", Task)] == ["persona-1", "finepdfs-1", "arxiv-1"]
    decks = {row["task_id"]: row for row in csv.DictReader((run / "scores" / "decks.csv").open())}
    assert decks["finepdfs-1"]["rendered"] == "False" and decks["finepdfs-1"]["failure"].startswith("environment/")
    assert (decks["finepdfs-1"]["constraint"], decks["finepdfs-1"]["content"], decks["finepdfs-1"]["style"]) == (
        "0.0",
        "1.0",
        "1.0",
    )
    assert (
        decks["persona-1"]["rendered"] == "True"
        and decks["persona-1"]["slides"] == "3"
        and decks["persona-1"]["constraint"] == "5.0"
    )

    summary = RunSummary.read(run)
    assert (summary.tasks, summary.rendered, summary.unjudged, summary.policy, summary.judge_scripted) == (
        3,
        2,
        0,
        "scripted",
        True,
    )
    assert summary.render_rate == pytest.approx(2 / 3) and 0.0 <= summary.diversity <= 1.0 and summary.vendi >= 1.0
    assert all(1 <= v <= 5 for v in (summary.content, summary.style)) and summary.avg is not None
    assert list(summary.domains) == ["PersonaHub", "arXiv", "FinePDFs"]

    report = run / "report"
    for name in (
        "table2.md",
        "table2.csv",
        "table3.md",
        "table3.csv",
        "domains.md",
        "domains.csv",
        "checklist.md",
        "checklist.csv",
        "cost_vs_score.png",
        "report.md",
    ):
        assert (report / name).is_file() and (report / name).stat().st_size > 0, name
    table2 = (report / "table2.md").read_text()
    assert "| DeepPresenter | scripted-policy |" in table2 and "SCRIPTED: rule-based, not a model" in table2
    judged = (run / "scores" / "judgements.jsonl").read_text()
    assert judged.count('"number": 1,') == 2 and "rule-based measurements, not a model" in judged

    # an ablation, judged by a model behind the fake OpenAI server (real HTTP): describer then judge, per slide
    ablation = tmp_path / "eval-single"
    slide_judge, checklist_judge = scripted_replies([GOOD_DESCRIPTION], [GOOD_SCORES]), answering(set())

    def policy(body: dict) -> Reply:
        return (checklist_judge if is_checklist(body) else slide_judge)(body)

    with FakeOpenAIServer(policy, model="fake-judge", strict="openai") as srv:
        judge = ["judge=openai", f"judge.endpoint.base_url={srv.url}", "judge.endpoint.model=fake-judge"]
        eval_run(tmp_path, f"tasks={tasks}", f"run.dir={ablation}", "limit=1", "agents=single", "reflection=none", *judge)
        slide_requests = [r for r in srv.requests if not is_checklist(r)]
        described = sum(has_image(r) for r in slide_requests)
        assert srv.refused == []
    single = RunSummary.read(ablation)
    assert (single.judge, single.judge_scripted, single.content, single.style, single.variant) == (
        "fake-judge",
        False,
        4.0,
        3.0,
        "w/o Dual-Agent, w/o Grounded Reflection",
    )
    slides = int(next(csv.DictReader((ablation / "scores" / "decks.csv").open()))["slides"])
    assert described == len(slide_requests) / 2 == slides
    checked = {row["class"]: row for row in csv.DictReader((ablation / "report" / "checklist.csv").open())}
    assert float(checked["overall"]["score"]) == 100.0 and int(checked["fidelity"]["yes"]) == slides  # a check per call
    assert (
        len(checklist_judge.asked)
        == len(srv.requests) - len(slide_requests)
        == sum(int(checked["overall"][k]) for k in ("yes", "no"))
    )
    assert report_main([str(run), str(ablation), "--out", str(tmp_path / "tables")]) == 0
    table3 = list(csv.DictReader((tmp_path / "tables" / "table3.csv").open()))
    assert [r["Configuration"] for r in table3] == ["DeepPresenter", "w/o Dual-Agent, w/o Grounded Reflection"]
    assert (tmp_path / "tables" / "cost_vs_score.png").is_file()
