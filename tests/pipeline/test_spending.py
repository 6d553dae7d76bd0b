"""The ledger against a priced endpoint (the fake server, with usage in its replies): killed and resumed, capped.

The whole pipeline with every role played by the fake model is killed mid-rollouts and resumed; the cap
tests play the tasks stage (no browser needed: each task draft and quality-gate verdict is a unit); the
rollouts stage's cap is tested in test_rollouts, a many-times-killed rollouts stage in test_resume.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from core.config import PROJECT_ROOT
from core.records import Rollout, Task, Trajectory, Verdict, read_parquet
from core.run.ledger import Ledger, read_ledger, usage_of
from core.run.store import RunStore
from core.run.usage import total
from fakes.model import every_role, task_writer
from fakes.openai_server import FakeOpenAIServer
from tests.pipeline.helpers import ENV, FakeSynthesis, every_role_command, run

pytestmark = pytest.mark.slow


def command(run: Path, url: str, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipeline.tasks",
        f"run.dir={run}",
        "tracking=disabled",
        "llm=openai",
        f"llm.base_url={url}",
        "llm.model=fake",
        "llm.backoff_base_s=0.01",
        "llm.price.input_per_mtok=100",
        "llm.price.output_per_mtok=400",
        "tasks.count=12",
        "tasks.eval_size=2",
        *overrides,
    ]


def start(*args: str) -> subprocess.Popen[bytes]:
    """The command in a session of its own (its Ray workers with it), to be killed mid-run."""
    return subprocess.Popen(
        list(args), cwd=PROJECT_ROOT, env=ENV, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def counted(ledger: Ledger) -> dict[tuple[str, str], tuple[int, int, int, float]]:
    """Finished units' calls, tokens and cost by stage and role."""
    return {
        (stage, role): (u.calls, u.prompt_tokens, u.completion_tokens, round(u.cost_usd, 9))
        for stage, usage in ledger.stages.items()
        for role, u in usage.items()
    }


def unit_costs(run_dir: Path, stage: str) -> list[float]:
    return [total(usage_of(json.loads(text), where).values()).cost_usd for _, text, where in RunStore(run_dir).iter_json(stage)]


def units(run_dir: Path) -> int:
    """The finished units of the tasks stage's parts (loose while it runs, sealed when it ends)."""
    stages = [p.name for p in (run_dir / "units").glob("task_*") if p.is_dir()]
    return sum(len(RunStore(run_dir).done(stage)) for stage in stages)


@dataclass(frozen=True)
class Whole:
    """The tasks stage run once, never killed or capped, and the requests it made."""

    root: Path
    asked: int


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Whole:
    """The uninterrupted tasks stage (one call at a time) both the killed and the capped runs are compared with:
    the fake answers each request the same at any concurrency and latency."""
    root = tmp_path_factory.mktemp("tasks") / "whole"
    with FakeOpenAIServer(task_writer, strict="openai") as srv:
        done = run(*command(root, srv.url, "llm.max_concurrency=1"))
        assert done.returncode == 0, done.stderr[-2000:]
        assert srv.refused == []
        return Whole(root, srv.served)


def test_killed_and_resumed_the_ledger_counts_every_finished_unit_once(whole: Whole, tmp_path: Path) -> None:
    asked_whole = whole.asked
    with FakeOpenAIServer(task_writer, latency_s=0.3, strict="openai") as srv:
        killed = tmp_path / "killed"
        child = start(*command(killed, srv.url, "llm.max_concurrency=2"))
        deadline = time.monotonic() + 120
        while units(killed) < 4 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(child.pid, signal.SIGKILL)  # mid-stage: calls in flight die with it
        child.wait()
        assert 4 <= units(killed) < units(whole.root)
        resumed = run(*command(killed, srv.url, "llm.max_concurrency=2"))
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        asked_killed = srv.served
        assert srv.refused == []
    ledger = read_ledger(killed)
    assert counted(ledger) == counted(read_ledger(whole.root))  # the same totals as the run never killed
    assert {stage for stage, _ in counted(ledger)} == {"task_drafts", "task_gate"} and ledger.total().cost > 0
    assert asked_killed >= asked_whole  # what was in flight at the kill was asked again, and counted once
    assert not ledger.unfinished  # a SIGKILL leaves nothing to count


def test_the_run_cap_stops_within_one_unit_and_a_higher_cap_finishes_with_nothing_played_twice(
    whole: Whole, tmp_path: Path
) -> None:
    reference, asked_whole = read_ledger(whole.root), whole.asked
    with FakeOpenAIServer(task_writer, strict="openai") as srv:
        cap = round(reference.total().cost / 3, 4)
        capped = tmp_path / "capped"
        stopped = run(*command(capped, srv.url, "llm.max_concurrency=1", f"run.max_cost_usd={cap}"))
        assert stopped.returncode == 3
        line = stopped.stderr.strip().splitlines()[-1]
        assert (
            line.startswith(f"python -m pipeline.tasks: stopped: stage tasks stopped: run.max_cost_usd={cap:g} reached: $")
            and "Raise the cap and rerun" in line
        )
        spent = read_ledger(capped)
        biggest = max(unit_costs(capped, "task_drafts") + unit_costs(capped, "task_gate"))
        assert cap <= spent.total().cost <= cap + biggest  # within one unit's cost of the cap
        finished = run(*command(capped, srv.url, "llm.max_concurrency=1", "run.max_cost_usd=100"))
        assert finished.returncode == 0, finished.stderr[-2000:]
        assert srv.served == asked_whole  # both runs together asked what one run asks: nothing twice
        assert srv.refused == []
    assert counted(read_ledger(capped)) == counted(reference)
    assert (capped / "stats" / "usage.json").is_file()


def test_cancelled_at_the_cap_units_in_flight_stop_uncommitted_and_are_played_by_the_rerun(tmp_path: Path) -> None:
    persona_notes = [
        "sources.arxiv.enabled=false",
        "sources.finepdfs.enabled=false",
        "sources.persona.share=1",
        "tasks.knowledge_grounded_share=1",
        "llm.max_concurrency=4",
    ]  # two calls per draft
    with FakeOpenAIServer(task_writer, latency_s=0.2, strict="openai") as srv:
        whole = run(*command(tmp_path / "whole", srv.url, *persona_notes))
        assert whole.returncode == 0, whole.stderr[-2000:]
        reference = read_ledger(tmp_path / "whole")
        capped = tmp_path / "capped"
        cap = round(reference.total().cost / 12, 4)  # less than the first wave's first calls: those in flight are stopped
        stopped = run(*command(capped, srv.url, *persona_notes, f"run.max_cost_usd={cap}", "run.budget_in_flight=cancel"))
        assert stopped.returncode == 3, stopped.stderr[-2000:]
        assert read_ledger(capped).unfinished["task_drafts"]["task_writer"].calls >= 1  # the notes of drafts stopped mid-way
        finished = run(*command(capped, srv.url, *persona_notes, "run.max_cost_usd=100"))
        assert finished.returncode == 0, finished.stderr[-2000:]
        assert srv.refused == []
    assert counted(read_ledger(capped)) == counted(reference)  # every unit committed once, as in the run never capped


def kill_session(child: subprocess.Popen) -> None:
    """SIGKILL the child and every process of its session (its Ray workers), by pid."""
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == child.pid:
                process.kill()
        except (ProcessLookupError, PermissionError, psutil.NoSuchProcess):
            continue
    child.wait()


@pytest.mark.chromium
@pytest.mark.timeout(1500)
def test_every_stage_s_calls_are_in_the_ledger_and_a_killed_run_resumes_to_the_same_totals(
    every_role_synthesis: FakeSynthesis, tmp_path: Path
) -> None:
    whole, killed = (
        every_role_synthesis.root,
        tmp_path / "killed",
    )  # whole: every_role_command(whole, url), tests/pipeline/conftest.py
    done, asked = every_role_synthesis.done, every_role_synthesis.served
    assert done.returncode == 0, done.stderr[-3000:]
    assert every_role_synthesis.refused == []
    with FakeOpenAIServer(every_role, strict="openai") as srv:
        child = start(*every_role_command(killed, srv.url))
        deadline = time.monotonic() + 600
        while not list(killed.glob("units/rollouts/*.json")) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        kill_session(child)  # mid-rollouts: the others are in flight
        assert len(list(killed.glob("units/rollouts/*.json"))) < 3
        resumed = run(*every_role_command(killed, srv.url))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert srv.refused == []
    usage = json.loads((whole / "stats" / "usage.json").read_text())
    roles = {stage: set(d["roles"]) for stage, d in usage["stages"].items()}
    assert roles == {
        "task_drafts": {"task_writer"},
        "task_gate": {"task_writer"},
        "rollouts": {"agent", "critic"},
        "verdicts": {"judge", "quality_judge"},
    }
    assert usage["total"]["calls"] == asked and usage["total"]["cost_usd"] > 0  # every request the server answered, once
    assert usage["outputs"]["accepted_rollouts"] >= 1 and usage["outputs"]["cost_per_mtok_sft_usd"] > 0
    assert counted(read_ledger(killed)) == counted(read_ledger(whole))  # killed mid-stage and resumed: the same totals
    for root in (whole, killed):
        named(root)
    breakdown = subprocess.run(
        [sys.executable, "-m", "pipeline.provenance", str(whole)],
        cwd=PROJECT_ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        "`agents/roles/prompts/presenter.en.j2`" in breakdown
        and "critic: fake [openai; t=0.7, top_p=0.95, max_tokens=8192]" in breakdown
    )
    card = (whole / "sft" / "README.md").read_text()
    assert "## What it cost" in card and "| rollouts | critic |" in card and "`critic/prompts/slide_review.j2`" in card
    assert "Tokens and cost" in (whole / "report" / "index.html").read_text() and "unknown" not in card


def named(root: Path) -> None:
    """Every record of the run names the templates (id and hash) and the model that made it; every template
    named is one the run's config hash covers (prompts.json), at the same version."""
    hashed = json.loads((root / "prompts.json").read_text())
    origins = []
    tasks = [t for split in ("train", "eval") for t in read_parquet(root / "tasks" / f"{split}.parquet", Task)]
    assert tasks and all(t.origin.templates and t.origin.models["task_writer"].model == "fake" for t in tasks)
    origins += [t.origin for t in tasks]
    for rollout in read_parquet(root / "rollouts.parquet", Rollout):
        assert {"agent", "critic"} <= set(rollout.origin.models) and "critic/prompts/slide_review.j2" in rollout.origin.templates
        origins.append(rollout.origin)
        for name, path in rollout.artifacts.items():
            if name.startswith("trajectory:"):
                trajectory = Trajectory.from_json((root / path).read_text())
                assert trajectory.origin.templates and trajectory.origin.models["agent"].model == "fake"
    for verdict in read_parquet(root / "verdicts.parquet", Verdict):
        assert verdict.origin.models, verdict
        origins.append(verdict.origin)
        if verdict.gate == "quality":
            assert verdict.origin.templates == {
                "filters/prompts/quality.j2": verdict.origin.templates["filters/prompts/quality.j2"]
            }
    assert all(hashed.get(template) == digest for origin in origins for template, digest in origin.templates.items())
