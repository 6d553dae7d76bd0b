"""The run report: figures, the static site (escaping, links, thumbnails cache), tracking, the CLI,
and a browser test over a real scripted-policy run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml

from core.config import PROJECT_ROOT, TrackingConfig
from core.failures import Failure
from core.records import CriticInjection, Message, Rollout, Step, ToolCall, Trajectory, Usage, Verdict
from core.run.ledger import read_ledger
from core.run.reader import RunReader
from core.run.store import RunStore
from core.run.tracking import Tracker
from core.run.usage import ReplicaUsage, RoleUsage
from fakes.runs import RolloutSpec, RunSpec, build_run, varied_run
from fakes.trajectories import title_finding
from pipeline.report import make_report, run_report
from pipeline.report.data import load_run
from pipeline.report.figures import ACCEPTED, NOT_FILTERED, compute_figures, metrics
from pipeline.report.steps import WARNING_MARK, view
from pipeline.spending import project_rollouts, usage_stats
from pipeline.synthesize import STAGES
from render.config import RenderConfig
from render.renderer import CHROMIUM_ARGS

PYTHON = sys.executable
ENV = {**os.environ, "WANDB_MODE": "disabled", "RAY_AUTH_MODE": "disabled"}
SRC = re.compile(r'(?:src|href)="([^"#]+)"')
JUDGE_COST = 0.001  # what each judge verdict's call cost


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    return build_run(tmp_path / "run", replace(varied_run(12, seed=3), judge_cost_usd=JUDGE_COST))


def _local_links(page: Path) -> list[Path]:
    """The files a page's src/href attributes point to (relative links only)."""
    return [page.parent / unquote(link) for link in SRC.findall(page.read_text(encoding="utf-8")) if "://" not in link]


# ---------------------------------------------------------------- figures


def test_figures_count_the_funnel_outcomes_and_defects(synthetic: Path) -> None:
    reader = RunReader(synthetic)
    figures = compute_figures(load_run(reader))
    rollouts, verdicts = reader.rollouts(), reader.verdicts() or []
    done = [r for r in rollouts if r.status == "done"]
    accepted = {v.task_id for v in verdicts} - {v.task_id for v in verdicts if not v.passed}
    assert [s.count for s in figures.funnel] == [12, 12, len(accepted), 6]
    assert figures.accepted == len(accepted) and figures.outcomes[ACCEPTED] == len(accepted)
    assert figures.failures == {"environment/timeout": len(rollouts) - len(done)}
    assert figures.defects[("low_contrast", "major")] == len(done)  # slide 2 of every deck
    assert figures.headline["yield"] == pytest.approx(len(accepted) / 12)
    spent = sum(r.cost_usd for r in rollouts) + JUDGE_COST * sum(
        v.gate != "constraint" and v.gate != "environment" for v in verdicts
    )
    assert figures.cost_usd == pytest.approx(spent)  # every stage's calls (the ledger), the judges' too
    assert figures.headline["cost_per_accepted_usd"] == pytest.approx(spent / len(accepted))
    judges = figures.spending["stages"]["verdicts"]["roles"]  # the consistency gate's role and the quality gate's
    assert judges["judge"]["cost_usd"] + judges["quality_judge"]["cost_usd"] == pytest.approx(
        spent - sum(r.cost_usd for r in rollouts)
    )
    by_role = {u.role: u for u in figures.usage}
    assert by_role["presenter"].prompt_tokens == sum(r.estimated_tokens["presenter"].prompt_tokens for r in done)
    flat = metrics(figures)
    assert flat["funnel/accepted"] == len(accepted) and flat["funnel/sft"] == 6
    assert flat["defects/low_contrast/major"] == len(done)
    assert {t.title for t in figures.task_mix} == {"language", "source", "aspect ratio", "slide count"}


def test_the_funnel_shows_the_export_s_parity_figure(synthetic: Path) -> None:
    def sft() -> str:
        return compute_figures(load_run(RunReader(synthetic))).funnel[-1].note

    assert sft().endswith("(parity not checked)")
    parity = {"turns_checked": 86, "turns_equal": 84, "turns_named_difference": {"defused_tags": 2}, "turns_different": 0}
    (synthetic / "stats").mkdir(exist_ok=True)
    (synthetic / "stats" / "export.json").write_text(json.dumps({"tokens": 1000, "parity": parity}))
    assert sft().endswith("parity: 84 of 86 trained turns equal to the teacher's request, 2 by a named difference")


def test_each_content_check_is_its_own_outcome_in_the_report(synthetic: Path) -> None:
    config = yaml.safe_load((synthetic / "config.yaml").read_text())
    config["filters"]["gates"] = ["constraint", "content", "consistency", "quality"]
    (synthetic / "config.yaml").write_text(yaml.safe_dump(config))
    before = {r.task_id: r.outcome for r in compute_figures(load_run(RunReader(synthetic))).rows}
    assert set(before.values()) <= {ACCEPTED, "undecided", "constraint", "consistency", "quality", "environment"}
    store = RunStore(synthetic)
    flagged = sorted(t for t, outcome in before.items() if outcome == "undecided")[:2]  # no content verdict yet: undecided
    for task_id, outcome in before.items():
        if outcome != "environment":
            code = {flagged[0]: "repeated_text", flagged[1]: "placeholder_text"}.get(task_id)
            verdict = Verdict(
                task_id=task_id, gate="content", passed=code is None, category=code, reasons=(f"{code}: slide 2",) if code else ()
            )
            store.commit("verdicts", f"{task_id}__content", verdict)
    figures = compute_figures(load_run(RunReader(synthetic)))
    assert figures.outcomes["repeated_text"] == 1 and figures.outcomes["placeholder_text"] == 1
    assert figures.gates["content"]["failed"] == 2
    make_report(RunReader(synthetic))
    html = (synthetic / "report" / "index.html").read_text(encoding="utf-8")
    assert "<td>repeated_text</td>" in html and "<td>placeholder_text</td>" in html


def test_a_run_without_filters_or_export_says_so(make_run: Any) -> None:
    ctx = make_run()
    ctx.store.root.joinpath("tasks").mkdir()
    figures = run_report(ctx)
    assert figures["rollouts"] == 0 and "report" in STAGES
    html = ctx.store.path("report", "index.html").read_text(encoding="utf-8")
    assert "The filters have not run" in html and "the export has not run" in html
    assert compute_figures(load_run(RunReader(ctx.store.root))).accepted is None


def test_rows_of_an_unfiltered_failed_rollout_carry_its_failure_category(tmp_path: Path) -> None:
    root = build_run(tmp_path / "run", varied_run(20, seed=1))
    for path in [root / "verdicts.parquet", *(root / "units" / "verdicts").iterdir()]:
        path.unlink()
    (root / "units" / "verdicts").rmdir()
    rows = compute_figures(load_run(RunReader(root))).rows
    assert {r.category for r in rows if r.status == "failed"} == {"environment"}
    assert {r.category for r in rows if r.status == "done"} == {NOT_FILTERED}


# ---------------------------------------------------------------- trajectories


def test_steps_show_calls_observations_injections_and_warnings() -> None:
    finding = json.dumps([title_finding(1)])
    messages = (
        Message("system", "sys", kind="prompt"),
        Message("user", "make slides", kind="prompt"),
        Message("assistant", reasoning="look", tool_calls=(ToolCall("c1", "inspect_slide", '{"html_file": "slides/s.html"}'),)),
        Message(
            "tool",
            "Rendered." + WARNING_MARK + "40,000 of 50,000 used",
            ("renders/s.png",),
            tool_call_id="c1",
            name="inspect_slide",
        ),
        Message("assistant", tool_calls=(ToolCall("critic_4", "thinking", '{"thought": "fix"}'),), kind="critic"),
        Message("tool", "fix the title", tool_call_id="critic_4", name="thinking", kind="critic"),
        Message("assistant", tool_calls=(ToolCall("c2", "write_file", '{"path": "x", "content": "<h1>'),)),
        Message("tool", "Error: malformed arguments", tool_call_id="c2", name="write_file"),
    )
    trajectory = Trajectory(
        task_id="t",
        agent="presenter",
        model="m",
        messages=messages,
        steps=(
            Step(0, 1.0, 0.1, 0.2, Usage(100, 10)),
            Step(1, 2.0, 0.1, 0.0, Usage(200, 5)),
            Step(2, 3.0, 0.0, 0.0, error="environment/model_error:server"),
        ),
        injections=(CriticInjection(0, 4, "critic-vlm", finding, "inspect_slide:slides/s.html:renders/s.png"),),
    )
    shown = view(trajectory)
    first, second, failed = shown.steps
    assert [n.role for n in shown.prompts] == ["system", "user"] and shown.warnings == 1 and shown.injections == 1
    assert first.tokens == (100, 10) and first.calls[0].arguments[0].value == "slides/s.html"
    observation = first.observations[0]
    assert (
        observation.text == "Rendered."
        and observation.warning.startswith("[context warning]")
        and observation.images == ("renders/s.png",)
    )
    injection = first.injections[0]
    assert (injection.tool, injection.artifact, injection.image) == ("inspect_slide", "slides/s.html", "renders/s.png")
    assert (
        injection.findings == [title_finding(1)]
        and injection.thought == "fix the title"
        and injection.critic_model == "critic-vlm"
    )
    assert second.calls[0].arguments[0].name == "(malformed JSON)" and second.observations[0].error
    assert failed.error == "environment/model_error:server"


# ---------------------------------------------------------------- the site


def test_site_escapes_text_and_every_local_link_resolves(synthetic: Path) -> None:
    figures = make_report(RunReader(synthetic))
    report = synthetic / "report"
    pages = sorted((report / "rollouts").glob("*.html"))
    assert figures["pages"] == len(pages) == 12
    for page in [report / "index.html", *pages]:
        html = page.read_text(encoding="utf-8")
        assert "<script>alert(1)</script>" not in html and "<b>tides</b>" not in html
        missing = [p for p in _local_links(page) if not p.exists()]
        assert not missing, f"{page.name} links to missing files: {missing[:3]}"
    injected = next(p for p in pages if "Critic injection" in p.read_text(encoding="utf-8"))
    html = injected.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "overflow at h1.title" in html
    assert not re.search(r"https?://", (report / "index.html").read_text(encoding="utf-8").replace(str(synthetic), ""))


def test_each_failure_is_explained_from_the_table(synthetic: Path) -> None:
    make_report(RunReader(synthetic))
    html = (synthetic / "report" / "index.html").read_text(encoding="utf-8")
    row = re.search(r"<tr><td>environment/timeout</td>.*?</tr>", html, re.S)
    assert row and Failure.timeout.description in row.group(0) and "<td>no</td>" in row.group(0)  # not transient


def test_the_report_shows_every_stage_s_calls_and_an_unknown_price_as_unknown(synthetic: Path) -> None:
    ledger = read_ledger(synthetic)
    per_rollout = ledger.stages["rollouts"]["agent"].cost / ledger.units["rollouts"]
    project_rollouts(synthetic, "rollouts", 24, None)  # 12 of 24 finished
    (synthetic / "stats" / "export.json").write_text(json.dumps({"tokens": 2_000_000}))
    make_report(RunReader(synthetic))
    html = (synthetic / "report" / "index.html").read_text(encoding="utf-8")
    cost = html[html.index('id="cost"') : html.index('id="throughput"')]
    assert "<td>rollouts</td><td>agent</td>" in cost and "<td>filters</td><td>judge</td>" in cost and "cost <b>$" in cost
    assert re.search(rf"projected cost of the rollouts stage</th><td>\${24 * per_rollout:,.4f}\s", cost)
    assert f"cost per million SFT tokens</th><td>${ledger.total().cost / 2:,.4f} " in cost
    RunStore(synthetic).spent_unfinished(
        "verdicts", "persona-00000__quality", {"judge": RoleUsage(calls=1, unpriced_calls=1)}, "no result"
    )
    make_report(RunReader(synthetic))
    html = (synthetic / "report" / "index.html").read_text(encoding="utf-8")
    cost = html[html.index('id="cost"') : html.index('id="throughput"')]
    assert (
        "filters: attempts that left no unit" in cost
        and "cost <b>unknown</b>" in cost
        and "1 calls of a model whose price is unknown" in cost
    )
    assert '<div class="big">unknown</div><div>cost per accepted trajectory</div>' in html


def test_the_cost_page_shows_what_each_replica_of_a_fleet_did(synthetic: Path) -> None:
    replicas = {
        "http://gpu1:8000/v1": ReplicaUsage(40, 80_000, 72_000, 2),
        "http://gpu2:8000/v1": ReplicaUsage(38, 76_000, 60_800),
    }
    usage = RoleUsage(calls=78, prompt_tokens=156_000, cached_tokens=132_800, replicas=replicas)
    RunStore(synthetic).spent_unfinished("rollouts", "persona-00001", {"agent": usage}, "interrupted")
    make_report(RunReader(synthetic))
    html = (synthetic / "report" / "index.html").read_text(encoding="utf-8")
    cost = html[html.index('id="cost"') : html.index('id="throughput"')]
    by_replica = cost[cost.index("By replica") :]
    row = re.search(r"<code>http://gpu1:8000/v1</code></td>(.*?)</tr>", by_replica, re.S)
    assert row and [re.sub("<[^>]+>", "", c).strip() for c in row.group(1).split("</td>")][:5] == [
        "40",
        "2",
        "80,000",
        "72,000",
        "90%",
    ]
    assert usage_stats(synthetic)["total"]["replicas"]["http://gpu2:8000/v1"]["cached_tokens"] == 60_800  # stats/usage.json


def test_thumbnails_are_made_once_and_remade_when_a_slide_changes(synthetic: Path) -> None:
    first = make_report(RunReader(synthetic))
    assert first["thumbs_made"] > 0 and first["thumbs_reused"] == 0 and first["thumbs_failed"] == 0
    again = make_report(RunReader(synthetic))
    assert again["thumbs_made"] == 0 and again["thumbs_reused"] == first["thumbs_made"]
    preview = next(synthetic.glob("rollouts/*/previews/slide_01.png"))
    preview.write_bytes(next(synthetic.glob("rollouts/*/previews/slide_03.png")).read_bytes())
    os.utime(preview, ns=(preview.stat().st_atime_ns, preview.stat().st_mtime_ns + 10**9))
    assert make_report(RunReader(synthetic))["thumbs_made"] == 1


def test_an_unreadable_first_slide_gets_no_thumbnail_and_no_broken_link(synthetic: Path) -> None:
    preview = next(synthetic.glob("rollouts/*/previews/slide_01.png"))
    preview.write_bytes(b"not a png")
    assert make_report(RunReader(synthetic))["thumbs_failed"] == 1
    task_id = preview.parts[-3]
    assert f"first slide of {task_id}" not in (synthetic / "report" / "index.html").read_text(encoding="utf-8")
    assert "previews/slide_01.png" in (synthetic / "report" / "rollouts" / f"{task_id}.html").read_text(encoding="utf-8")


def test_a_rollout_page_shows_its_pptx_fidelity(synthetic: Path) -> None:
    make_report(RunReader(synthetic))
    html = next(
        h for p in synthetic.glob("report/rollouts/*.html") if "No final deck" not in (h := p.read_text(encoding="utf-8"))
    )
    slides = int(re.search(r"Final deck \((\d+) slides", html).group(1))
    assert (
        f"PPTX: editable; rendered by LibreOffice 7.4.7.2: 97.5% of {40 * slides} words kept, displacement median 0.4 px (max 2.5)"
        in html
    )
    assert "1 native tables, 2 pictures" in html and html.count("PPTX: 97.5% of 40 words kept") == slides


class RecordingTracker(Tracker):
    """A tracker that keeps what it is given instead of sending it to wandb."""

    def __init__(self) -> None:
        super().__init__(TrackingConfig(mode="disabled"), Path("."), "test", {}, "test")
        self.summaries: dict[str, Any] = {}
        self.tables: dict[str, tuple[list[str], list[list[Any]]]] = {}

    @property
    def enabled(self) -> bool:
        return True

    def summary(self, metrics: dict[str, Any]) -> None:
        self.summaries |= metrics

    def table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        self.tables[key] = (columns, rows)


def test_the_dashboard_gets_the_same_figures_as_the_site(synthetic: Path) -> None:
    tracker = RecordingTracker()
    make_report(RunReader(synthetic), tracker)
    assert tracker.summaries == metrics(compute_figures(load_run(RunReader(synthetic))))
    columns, rows = tracker.tables["report/rollouts"]
    assert len(rows) == 12
    covers = [row[columns.index("first_slide")] for row in rows]
    assert all(c is None or (isinstance(c, Path) and c.suffix == ".jpg" and c.is_file()) for c in covers)
    assert sum(c is not None for c in covers) == sum(row[columns.index("status")] == "done" for row in rows)


def run_module(module: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m module args...` from the project root, its output captured."""
    command = [PYTHON, "-m", module, *args]
    return subprocess.run(command, cwd=PROJECT_ROOT, env=ENV, capture_output=True, text=True, check=False, timeout=timeout)


def test_cli_writes_the_report_and_refuses_a_non_run(synthetic: Path, tmp_path: Path) -> None:
    ok = run_module("pipeline.report", str(synthetic))
    assert ok.returncode == 0, ok.stderr
    assert str(synthetic / "report" / "index.html") in ok.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = run_module("pipeline.report", str(empty))
    assert bad.returncode == 2 and "not a run directory" in bad.stderr


# ---------------------------------------------------------------- a real run in a browser


@pytest.fixture(scope="session")
def scripted_run(scripted_synthesis: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A scripted-policy run (limit=3: the session's, tests/pipeline/conftest.py, copied), filtered when the filters
    exist, plus one injected rollout if it had none."""
    root = Path(shutil.copytree(scripted_synthesis, tmp_path_factory.mktemp("report-run") / "run"))
    if not (root / "verdicts.parquet").exists() and importlib.util.find_spec("filters.run"):
        filtered = run_module("filters.run", str(root), timeout=600)
        assert filtered.returncode == 0, filtered.stderr[-3000:]
    injected = next((r.task_id for r in RunReader(root).rollouts() if r.injections), None)
    if injected is None:
        injected = "synthetic-injected"
        spec = RolloutSpec(injected, aspect="4:3", slides=3, revision="fix", warned=True)
        build_run(root, RunSpec((spec,), verdicts=(root / "verdicts.parquet").exists()))
    report = run_module("pipeline.report", str(root), timeout=300)
    assert report.returncode == 0, report.stderr[-3000:]
    return root, injected


LOAD_ALL_IMAGES = """() => Promise.all([...document.images].map(img => {
  img.loading = "eager";
  return img.complete ? null : new Promise(done => { img.onload = img.onerror = done; });
}))"""
BROKEN_IMAGES = "() => [...document.images].filter(img => !img.naturalWidth).map(img => img.src)"


@pytest.mark.chromium
@pytest.mark.slow
def test_report_of_a_scripted_run_in_chromium(scripted_run: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> None:
    from playwright.sync_api import expect, sync_playwright

    root, injected = scripted_run
    rollouts: list[Rollout] = RunReader(root).rollouts()
    scripted = next(r for r in rollouts if r.task_id != injected and r.status == "done")
    shots = tmp_path_factory.mktemp("report-screenshots")
    print(f"\nreport screenshots in {shots}")
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=RenderConfig().chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        page.goto((root / "report" / "index.html").as_uri())
        assert (
            json.loads((root / "stats" / "rollouts.json").read_text())["command_jail"] == "bubblewrap"
        )  # the scripted Researcher runs a command
        expect(page.locator("#throughput tr", has_text="commands ran in")).to_contain_text("bubblewrap")
        table = page.locator("#rollout-table tbody tr")
        expect(table).to_have_count(len(rollouts))
        page.evaluate(LOAD_ALL_IMAGES)
        assert page.evaluate(BROKEN_IMAGES) == []
        page.screenshot(path=shots / "index.png", full_page=True)

        page.select_option("select[data-filter=source]", "persona")
        personas = sum(RunReader(root).tasks()[r.task_id].source == "persona" for r in rollouts)
        expect(page.locator("#rollout-table tbody tr:not(.hidden)")).to_have_count(personas)
        expect(page.locator("#shown")).to_have_text(f"{personas} of {len(rollouts)} rollouts")
        page.locator("#rollouts").screenshot(path=shots / "index-filtered-persona.png")
        page.select_option("select[data-filter=source]", "")
        expect(page.locator("#rollout-table tbody tr:not(.hidden)")).to_have_count(len(rollouts))

        page.click(f"#rollout-table a[href='rollouts/{scripted.task_id}.html']")
        expect(page).to_have_url(re.compile(rf"/report/rollouts/{re.escape(scripted.task_id)}\.html$"))
        expect(page.locator("#deck figure.slide img")).to_have_count(len(RunReader.open(root).deck(scripted).slides))
        render = page.locator(".observation img.render").first
        render.scroll_into_view_if_needed()
        expect(render).to_be_visible()
        page.evaluate(LOAD_ALL_IMAGES)
        assert page.evaluate(BROKEN_IMAGES) == []
        page.screenshot(path=shots / f"rollout-{scripted.task_id}.png", full_page=True)

        page.goto((root / "report" / "index.html").as_uri())
        page.click(f"#rollout-table a[href='rollouts/{injected}.html']")
        injection = page.locator(".injection").first
        injection.scroll_into_view_if_needed()
        expect(injection).to_be_visible()
        expect(injection.locator("table.findings")).to_contain_text("overflow at h1.title")
        expect(injection.locator("figure.seen img")).to_be_visible()
        expect(page.locator(".warning").first).to_contain_text("[context warning]")
        injection.screenshot(path=shots / "critic-injection.png")
        page.evaluate(LOAD_ALL_IMAGES)
        assert page.evaluate(BROKEN_IMAGES) == []
        page.screenshot(path=shots / f"rollout-{injected}.png", full_page=True)
        browser.close()
    assert errors == []


@pytest.mark.chromium
def test_the_task_table_pages_and_searches_every_row_while_the_index_holds_one_page(
    synthetic: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    import pipeline.report.site as site

    monkeypatch.setattr(site, "PAGE", 5)  # 12 rollouts: three pages
    make_report(RunReader(synthetic))
    ids = [r.task_id for r in RunReader(synthetic).rollouts()]
    index = synthetic / "report" / "index.html"
    assert index.read_text(encoding="utf-8").count('<tr data-source="') == 5
    assert len(list((synthetic / "report" / "thumbs").rglob("*.jpg"))) <= 5  # thumbnails of the first page only
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=RenderConfig().chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(index.as_uri())
        rows = page.locator("#rollout-table tbody tr")
        expect(rows).to_have_count(5)
        expect(page.locator("#page-at")).to_have_text("page 1 of 3")
        page.click("#page-next")
        page.click("#page-next")
        expect(rows).to_have_count(2)
        expect(page.locator("#rollout-table tbody a")).to_have_text(ids[10:])
        page.fill("input[data-filter=task]", ids[11])  # a row of the last page, found from the first
        expect(rows).to_have_count(1)
        expect(page.locator("#shown")).to_have_text(f"1 of {len(ids)} rollouts")
        page.click(f"#rollout-table a[href='rollouts/{ids[11]}.html']")
        expect(page).to_have_url(re.compile(rf"/report/rollouts/{re.escape(ids[11])}\.html$"))
        browser.close()
    assert errors == []
