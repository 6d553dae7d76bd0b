"""Stage 1: task writing, cleaning, constraints and the split, offline and against the fake server."""

from __future__ import annotations

import json
import random
from pathlib import Path

import datasets
import pytest

from core.records import Constraints, Task, read_parquet
from core.run.ledger import read_ledger
from fakes.model import task_writer
from fakes.openai_server import FakeOpenAIServer
from pipeline.augment import constraint_text, draw_constraints, slide_bucket
from pipeline.checklists import RULES
from pipeline.cleaning import contamination_groups, stratified_group_split
from pipeline.config import ConstraintMix, SourceConfig
from pipeline.sources import LoadReport, SourceError, load_source
from pipeline.tasks import run_tasks


def tasks_of(run: Path) -> tuple[list[Task], list[Task]]:
    return read_parquet(run / "tasks" / "train.parquet", Task), read_parquet(run / "tasks" / "eval.parquet", Task)


def test_scripted_stage_runs_offline_and_resumes(make_run) -> None:
    ctx = make_run("limit=30")
    figures = run_tasks(ctx)
    train, held_out = tasks_of(ctx.store.root)
    assert figures["train"] == len(train) > 0 and figures["eval"] == len(held_out) > 0
    every = train + held_out
    assert {t.source for t in every} == {"persona", "arxiv", "finepdfs"}
    assert all(t.provenance["writer"] == "scripted" for t in every)
    assert all(Path(a).is_file() for t in every for a in t.attachments)
    assert all(t.checklist and t.checklist_by == RULES for t in every)  # written with the task, by rule offline
    slide_rules = {c.rule for t in every for c in t.checklist if c.check_id == "fundamentals-slides"}
    assert slide_rules == {
        f"slides:{t.constraints.slides_min}-{t.constraints.slides_max}" for t in every if t.constraints.slides_min
    }
    assert not {t.provenance["doc_id"] for t in train} & {t.provenance["doc_id"] for t in held_out}
    stats = (ctx.store.root / "tasks" / "stats.md").read_text()
    for heading in ("| Language |", "| Source |", "| Aspect ratio |", "| Slide count |", "## Cleaning funnel"):
        assert heading in stats
    loaded = datasets.load_dataset(
        "parquet", data_files={s: str(ctx.store.root / "tasks" / f"{s}.parquet") for s in ("train", "eval")}
    )
    assert loaded["train"].num_rows == len(train)
    # a rerun skips the finished stage; a rerun after losing the outputs rewrites nothing already drafted
    assert run_tasks(make_run("limit=30")) == figures
    (ctx.store.root / "units" / "stages" / "tasks.json").unlink()
    drafts_before = {p.name: p.stat().st_mtime_ns for p in (ctx.store.root / "units" / "task_drafts").iterdir()}
    assert run_tasks(make_run("limit=30")) == figures
    assert {p.name: p.stat().st_mtime_ns for p in (ctx.store.root / "units" / "task_drafts").iterdir()} == drafts_before


PERSONAS = [
    "A bicycle mechanic who restores vintage racing frames",
    "A chef specialising in Sichuan cuisine",
    "A twin sister who loves houseplants",
    "A twin brother who also loves houseplants",
    "A vandal with no clear plan",
    "A marine biologist studying coral bleaching",
    "A retired judge writing about legal history",
    "A nurse coordinating rural vaccination drives",
]


def test_llm_writer_against_the_fake_server(make_run, tmp_path: Path) -> None:
    personas = tmp_path / "personas.jsonl"
    personas.write_text("".join(json.dumps({"persona": p}) + "\n" for p in PERSONAS))
    with FakeOpenAIServer(task_writer, strict="openai") as srv:
        ctx = make_run(
            "llm=openai",
            f"llm.base_url={srv.url}",
            "llm.model=fake",
            "llm.backoff_base_s=0.01",
            "tasks.count=10",
            "tasks.eval_size=2",
            f"sources.persona.path={personas}",
            "sources.persona.share=0.7",
            "sources.arxiv.share=0.3",
            "sources.finepdfs.enabled=false",
        )
        figures = run_tasks(ctx)
        reasks = [r for r in srv.requests if len(r["messages"]) > 1]
        assert srv.refused == []
    assert reasks and "could not be used" in reasks[0]["messages"][-1]["content"]
    stats = (ctx.store.root / "tasks" / "stats.md").read_text()
    assert "| language_mismatch | 1 |" in stats  # the chef declared English but wrote Chinese
    assert "| near_duplicate | 2 |" in stats  # the twins, and the third arXiv task (2 papers, cycled)
    assert "| quality_gate | 1 |" in stats  # the vandal
    train, held_out = tasks_of(ctx.store.root)
    assert figures["train"] + figures["eval"] == len(train) + len(held_out) == 6 and len(held_out) == 1
    assert all(t.provenance["writer"] == "model:fake" for t in train + held_out)
    documents = [t for t in train + held_out if t.source == "arxiv"]
    assert documents and all(
        t.checklist[-1].check_id == "writer-01"
        and t.checklist[-1].question.startswith("Does the deck present the method")
        and "model:fake" in t.checklist_by
        and t.checklist[0].cls == "fundamentals"
        for t in documents
    )  # the writer's checks after the rules'
    assert all(t.checklist_by == RULES for t in train + held_out if t.source == "persona")  # it wrote none for these
    assert any("bicycle" in t.instruction for t in train + held_out)  # recovered after the re-ask
    assert read_ledger(ctx.store.root).by_role()["task_writer"].calls == len(srv.requests)


def test_constraint_mix_matches_the_configured_probabilities() -> None:
    mix = ConstraintMix()
    rng = random.Random(0)
    drawn = [draw_constraints(rng, mix, "en") for _ in range(2000)]
    for name, probabilities, value in (
        ("slides", mix.slides, lambda c: slide_bucket(c, mix.slides)),
        ("aspect", mix.aspect, lambda c: c.aspect_ratio or "free"),
    ):
        total = sum(probabilities.values())
        for bucket, p in probabilities.items():
            share = sum(value(c) == bucket for c in drawn) / len(drawn)
            assert abs(share - p / total) < 0.03, (name, bucket, share, p)
    assert abs(sum(c.language is not None for c in drawn) / 2000 - mix.language_explicit) < 0.03
    assert all(1 <= c.slides_min <= 20 and c.slides_min == c.slides_max for c in drawn if c.slides_min)


def test_constraint_text_in_the_task_language() -> None:
    c = Constraints(slides_min=8, slides_max=8, aspect_ratio="A1", language="zh")
    assert constraint_text(c, "zh") == "要求：共 8 页；版式为A1 竖版海报；使用中文撰写。"
    assert constraint_text(c, "en") == "Requirements: exactly 8 slides; an A1 portrait poster format; written in Chinese."
    assert constraint_text(Constraints(), "en") == ""


def test_split_keeps_groups_whole_and_strata_proportional() -> None:
    rng = random.Random(1)
    words = lambda: " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=6)) for _ in range(12))  # noqa: E731
    tasks = [Task(f"t{i}", "persona", words(), "en") for i in range(40)]
    tasks[8] = Task("t8", "persona", tasks[4].instruction + "!", "en")  # a near-duplicate of t4, another document
    doc_ids = [f"d{i // 4}" for i in range(40)]  # 4 tasks per document
    groups = contamination_groups(tasks, doc_ids, threshold=0.6)
    strata = ["a" if i < 20 else "b" for i in range(40)]
    train, held_out = stratified_group_split(strata, groups, eval_size=8, seed=0)
    assert len(held_out) == 8 and sorted(train + held_out) == list(range(40))
    assert groups[4] == groups[8] and len(set(groups)) == 9  # documents d1 and d2 now travel together
    assert {doc_ids[i] for i in train}.isdisjoint(doc_ids[i] for i in held_out)
    assert sum(strata[i] == "a" for i in held_out) == 4


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "does not exist"),
        ("empty", "is empty"),
        ("columns", "no 'persona' column"),
        ("nothing", "set sources.persona.path"),
    ],
)
def test_bad_sources_name_the_source(tmp_path: Path, setup: str, message: str) -> None:
    path = tmp_path / "p.jsonl"
    if setup == "empty":
        path.write_text("")
    if setup == "columns":
        path.write_text('{"text": "no persona field here"}\n')
    cfg = SourceConfig() if setup == "nothing" else SourceConfig(path=str(path))
    with pytest.raises(SourceError, match=f"source persona: .*{message}|{message}"):
        list(load_source("persona", cfg, LoadReport()))


def test_one_corrupt_pdf_is_skipped_and_counted(tmp_path: Path) -> None:
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (tmp_path / "good.pdf").write_bytes((Path(__file__).parents[2] / "data/samples/arxiv/arxiv_1409.0473.pdf").read_bytes())
    (tmp_path / "empty").mkdir()
    report = LoadReport()
    docs = list(load_source("arxiv", SourceConfig(path=str(tmp_path)), report))
    assert [d.provenance["source_id"] for d in docs] == ["good.pdf"]
    assert report.skipped["arxiv/unreadable_pdf"] == 1
    with pytest.raises(SourceError, match="no PDF files"):
        list(load_source("arxiv", SourceConfig(path=str(tmp_path / "empty")), report))


def test_parquet_of_paper_text_is_a_source(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = "We study numerical methods for stiff differential equations and their stability. " * 10
    pq.write_table(
        pa.table({"id": ["p1", "p2"], "title": ["Stiff solvers", "Short"], "text": [text, "too short"]}),
        tmp_path / "papers.parquet",
    )
    report = LoadReport()
    docs = list(load_source("arxiv", SourceConfig(path=str(tmp_path / "papers.parquet"), licence="CC BY 4.0"), report))
    assert [(d.title, d.language, d.provenance["licence"]) for d in docs] == [("Stiff solvers", "en", "CC BY 4.0")]
    assert report.skipped["arxiv/too_short"] == 1


def test_a_scripted_task_writer_while_the_agents_use_a_model(make_run) -> None:
    """`roles.task_writer.backend=scripted` wins over the backbone: no endpoint is asked (none listens here)."""
    ctx = make_run("limit=6", "llm=openai", "llm.base_url=http://127.0.0.1:9/v1", "roles.task_writer.backend=scripted")
    figures = run_tasks(ctx)
    train, held_out = tasks_of(ctx.store.root)
    assert figures["written"] == 6 and all(t.provenance["writer"] == "scripted" for t in train + held_out)
    assert read_ledger(ctx.store.root).by_role() == {}  # no model call counted
    assert all(t.origin.models["task_writer"].backend == "scripted" for t in train + held_out)
