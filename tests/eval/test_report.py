"""The Pareto frontier on a known point set; the paper's tables and Figure 6 from run summaries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from eval.figures import pareto_frontier
from eval.report import FIGURE, write_report
from eval.summary import RunSummary


def test_pareto_frontier_on_a_known_point_set() -> None:
    points = [(1.0, 3.0), (2.0, 4.0), (2.0, 3.5), (3.0, 3.9), (0.5, 2.0), (4.0, 4.5), (4.0, 4.5), (5.0, 4.4), (0.5, 1.0)]
    # (2, 3.5) costs as much as (2, 4) for less; (3, 3.9) and (5, 4.4) cost more than cheaper, better points;
    # (0.5, 1) is beaten by (0.5, 2); of the two identical (4, 4.5) the first is kept.
    assert pareto_frontier(points) == [4, 0, 1, 5]
    assert pareto_frontier([]) == []
    assert pareto_frontier([(0.0, 4.0), (0.0, 4.0)]) == [0]


def summary(
    model: str, variant: str = "full", framework: str = "DeepPresenter", avg: float = 4.0, cost: float = 0.5
) -> RunSummary:
    return RunSummary(
        framework=framework,
        model=model,
        variant=variant,
        run_dir=f"runs/{model}",
        tasks=4,
        rendered=3,
        render_rate=0.75,
        unjudged=0,
        constraint=avg + 0.5,
        content=avg - 0.5,
        style=avg,
        avg=avg,
        diversity=0.5 if variant == "full" else None,
        vendi=2.5,
        cost_per_deck=cost,
        tokens_per_deck=1e5,
        policy="model",
        describer="gpt-4o",
        judge="gpt-4o",
        judge_scripted=False,
        judge_cost_usd=0.1,
        encoder="facebook/dinov2-base",
        domains={
            "PersonaHub": {"tasks": 3, "rendered": 2, "constraint": 4.0, "content": 3.5, "style": 4.1, "avg": 3.87},
            "arXiv": {"tasks": 1, "rendered": 1, "constraint": 5.0, "content": None, "style": None, "avg": None},
        },
    )


def test_tables_and_figure(tmp_path: Path) -> None:
    runs = [
        summary("glm-sft", avg=4.19, cost=0.05),
        summary("gpt-4o", avg=4.22, cost=0.9),
        summary("glm-sft", "w/o Grounded Reflection", avg=3.82, cost=0.04),
        summary("gpt-4o", "w/o Dual-Agent", avg=4.04, cost=0.7),
        summary("gamma", framework="Gamma", avg=4.36, cost=1.5),
    ]
    tables = write_report(runs, tmp_path)
    for name in ("table2", "table3", "domains"):
        assert (tmp_path / f"{name}.md").is_file() and (tmp_path / f"{name}.csv").is_file()
    with Image.open(tmp_path / FIGURE) as img:
        assert img.width > 500 and img.height > 300

    table2, table3, domains, checklist = tables
    assert checklist.rows == []  # runs made before checklists have none
    assert table2.columns == ["Framework", "Model", "Constraint", "Content", "Style", "Avg.", "Diversity"]
    assert "| Gamma | gamma | **4.86** | **3.86** | **4.36** | **4.36** | **0.50** |" in table2.markdown()
    assert "| DeepPresenter | glm-sft (w/o Grounded Reflection) | 4.32 | 3.32 | 3.82 | 3.82 | – |" in table2.markdown()
    assert [r[:2] for r in table3.rows] == [
        ["glm-sft", "DeepPresenter"],
        ["glm-sft", "w/o Grounded Reflection"],
        ["gpt-4o", "DeepPresenter"],
        ["gpt-4o", "w/o Dual-Agent"],
        ["gamma", "Gamma"],
    ]
    assert domains.rows[1] == ["arXiv", 5.0, None, None, None, 1, 1]
    assert table2.csv().splitlines()[1] == "DeepPresenter,glm-sft,4.69,3.69,4.19,4.19,0.5"
    page = (tmp_path / "report.md").read_text()
    assert page.index("Table 2") < page.index("Table 3") < page.index("Table 6") < page.index(FIGURE)


def test_a_summary_round_trips(tmp_path: Path) -> None:
    run = summary("m")
    run.write(tmp_path)
    assert RunSummary.read(tmp_path) == run
    assert replace(run, variant="w/o Dual-Agent").label == "m (w/o Dual-Agent)"
    (tmp_path / "scores" / "summary.json").write_text('{"framework": "x", "surprise": 1}')
    with pytest.raises(ValueError, match="surprise"):
        RunSummary.read(tmp_path)
