"""filters.run end to end on a synthetic run directory: verdicts, categories, report, resumability, judges."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.config import ConfigError
from core.records import Rollout, Verdict, read_parquet
from core.run.reader import RunReader
from fakes.openai_server import ErrorReply, FakeOpenAIServer, Reply
from filters.acceptance import outcomes
from filters.run import STAGE, RunIncomplete, judge_rollouts, load_config, main
from tests.filters.helpers import EXPECTED, SCENARIO, SCRIPTED

REPO = Path(__file__).resolve().parents[2]
GATES = ("constraint", "content", "consistency", "quality")
RULES = ("constraint", "content")
REJECTED_BY_RULES = {"zh-169-count", "en-no-deck", "en-169-junk"}  # no judge call for these


def judge(root: Path, *overrides: str) -> dict[str, Any]:
    return asyncio.run(judge_rollouts(RunReader(root), load_config(RunReader(root), overrides)))


def verdicts(root: Path) -> dict[str, dict[str, Verdict]]:
    by_task: dict[str, dict[str, Verdict]] = defaultdict(dict)
    for v in read_parquet(root / "verdicts.parquet", Verdict):
        by_task[v.task_id][v.gate] = v
    return by_task


def fates(root: Path, gates: tuple[str, ...] = GATES) -> dict[str, str | None]:
    rollouts = read_parquet(root / "rollouts.parquet", Rollout)
    return {o.task_id: o.category for o in outcomes(rollouts, read_parquet(root / "verdicts.parquet", Verdict), gates)}


def unit_times(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (root / "units" / STAGE).glob("*.json")}


# ---------------------------------------------------------------- the CLI on exported decks (scripted judges)


def test_cli_filters_the_scenario_and_writes_verdicts_and_report(scenario_run: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "filters.run", str(scenario_run)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Filters: 9 rollouts, 3 accepted (33.3%), 6 rejected, 0 undecided")
    assert "rollouts=9 accepted=3 undecided=0 rejected=6 verdicts_written=27" in result.stdout
    assert "judge_calls_skipped_consistency=3 judge_calls_skipped_quality=3" in result.stdout
    assert fates(scenario_run) == EXPECTED
    found = verdicts(scenario_run)
    assert set(found["zh-failed"]) == {"environment"}  # a failed rollout runs no gate
    assert all(
        set(found[s.task_id]) == set(RULES if s.task_id in REJECTED_BY_RULES else GATES) for s in SCENARIO if not s.failure
    )
    for task_id in ("en-169-ok", "zh-43-ok", "en-a1-poster", "en-43-ignored", "en-169-broken"):  # real decks read as sound
        assert found[task_id]["content"].passed, found[task_id]["content"].reasons
    junk = found["en-169-junk"]["content"]
    assert (junk.category, junk.reasons[0]) == (
        "duplicate_slides",
        "duplicate_slides: near-same slides: slides 1 and 2 (100% alike); slides 1 and 3 (100% alike); slides 2 and 3 (100% alike)",
    )
    assert found["zh-failed"]["environment"].reasons == ("environment/context_overflow",)
    assert found["zh-169-count"]["constraint"].reasons == ("slide count: expected 5, got 3",)
    assert found["zh-169-count"]["constraint"].score == pytest.approx(2 / 3)
    for task_id in ("en-169-ok", "zh-43-ok", "en-a1-poster"):  # 16:9, 4:3 and A1; English and Chinese
        assert found[task_id]["constraint"].passed and found[task_id]["constraint"].score == 1.0
    no_deck = found["en-no-deck"]
    assert [no_deck[g].category for g in RULES] == ["environment", "environment"]
    assert no_deck["constraint"].reasons[0].endswith("rollouts/en-no-deck/deck.pdf: no such file")
    assert found["en-43-ignored"]["consistency"].reasons[-1].startswith("rule-based stand-in")
    assert (
        found["en-169-broken"]["quality"]
        .reasons[0]
        .startswith("slide 1 (slides/slide_01.html): measured broken_image (critical) img.hero")
    )
    report = (scenario_run / "filters" / "failures.md").read_text()
    assert "| environment | 2 | 33.3% | 32.3% |" in report and "| broken_image | 1 | 0 | 0 | 1 |" in report
    assert "| duplicate_slides | 1 | 16.7% | - |" in report and "| content | 8 | 6 | 2 | 1 |" in report
    for chart in ("failures.png", "defects.png"):
        assert (scenario_run / "filters" / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_refuses_bad_input_with_exit_2_and_one_line(fake_scenario_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    assert main([str(fake_scenario_run / "nowhere")]) == 2  # not a run directory
    assert main([str(fake_scenario_run), "filters.gates=[constraint,vibes]"]) == 2
    (fake_scenario_run / "rollouts.parquet").unlink()  # no rollouts stage: neither its view nor its units
    shutil.rmtree(fake_scenario_run / "units" / "rollouts")
    assert main([str(fake_scenario_run)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 4 and all(line.startswith("python -m filters.run: error: ") for line in errors)
    assert "unknown ['vibes']" in errors[2] and "run the rollouts stage first" in errors[3]


# ---------------------------------------------------------------- resumability


def test_rerun_commits_nothing_twice_and_fills_in_only_what_is_missing(fake_scenario_run: Path) -> None:
    root = fake_scenario_run
    assert judge(root)["verdicts_written"] == 27
    first = unit_times(root)
    again = judge(root)  # every unit exists: a second commit would raise UnitExists
    assert again["verdicts_written"] == 0 and unit_times(root) == first
    (root / "units" / STAGE / "en-169-ok__quality.json").unlink()
    assert judge(root)["verdicts_written"] == 1
    assert {k: v for k, v in unit_times(root).items() if k != "en-169-ok__quality.json"} == {
        k: v for k, v in first.items() if k != "en-169-ok__quality.json"
    }
    assert len(read_parquet(root / "verdicts.parquet", Verdict)) == 27 and fates(root) == EXPECTED


def test_adding_a_gate_later_judges_only_that_gate(fake_scenario_run: Path) -> None:
    root = fake_scenario_run
    assert judge(root, "filters.gates=[constraint]")["verdicts_written"] == 9
    assert fates(root, ("constraint",)) == {
        k: v if v in (None, "constraint", "environment") else None for k, v in EXPECTED.items()
    }
    assert judge(root)["verdicts_written"] == 18  # content on 8 decks, then the judges on the 5 no rule gate rejected


# ---------------------------------------------------------------- model judges through the run


def judges(body: dict[str, Any]) -> Reply:
    """Consistency: addressed when the agent edited the slide it was told about; quality: nothing critical."""
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        status = "addressed" if "- edit_file slides/slide_01.html" in content else "ignored"
        return Reply(
            json.dumps({"findings": [{"finding": 1, "status": status, "reason": "diff"}], "passed": status == "addressed"})
        )
    return Reply(json.dumps({"defects": [], "passed": True}))


def with_judges(root: Path, url: str) -> None:
    config = {
        "llm": {**SCRIPTED["llm"], "max_retries": 0},
        "roles": {role: {"backend": "openai", "base_url": url, "model": f"{role}-model"} for role in ("judge", "quality_judge")},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))


def test_model_judges_from_the_roles_decide_and_the_scripted_label_is_gone(fake_scenario_run: Path) -> None:
    root = fake_scenario_run
    with FakeOpenAIServer(judges, strict="vllm-glm") as srv:
        with_judges(root, srv.url)
        figures = judge(root)
        models = {r["model"] for r in srv.requests}
    assert srv.refused == []
    assert models == {"judge-model", "quality_judge-model"}
    assert figures["verdicts_written"] == 27 and fates(root) == EXPECTED
    found = verdicts(root)
    assert all("rule-based" not in reason for v in found["en-169-ok"].values() for reason in v.reasons)
    assert found["en-169-ok"]["quality"].reasons == ()  # passed by the vision judge


def test_judge_failure_leaves_the_verdict_undecided_for_the_next_run(fake_scenario_run: Path) -> None:
    root = fake_scenario_run

    def vision_down(body: dict[str, Any]) -> Reply | ErrorReply:
        return ErrorReply(500, "judge down") if isinstance(body["messages"][0]["content"], list) else judges(body)

    with FakeOpenAIServer(vision_down, strict="vllm-glm") as srv:
        with_judges(root, srv.url)
        figures = judge(root)
    assert srv.refused == []  # the failures are the test's own 500s (an outage), not refused requests
    assert figures["judge_failures_quality"] == 4  # 4 decks reach the vision judge; the broken one is rejected on measurements
    assert figures["undecided"] == 3  # the three that failed no other gate
    assert not (root / "units" / STAGE / "en-169-ok__quality.json").exists()
    with FakeOpenAIServer(judges, strict="vllm-glm") as srv:
        with_judges(root, srv.url)
        assert judge(root)["verdicts_written"] == 4
        assert srv.refused == []
    assert fates(root) == EXPECTED


def test_a_deck_the_content_gate_rejects_costs_no_judge_call(fake_scenario_run: Path) -> None:
    root = fake_scenario_run
    with FakeOpenAIServer(judges, strict="vllm-glm") as srv:
        with_judges(root, srv.url)
        judge(root)
        calls = [r for r in srv.requests if r.get("messages")]
        assert srv.refused == []
    # Of the decks the rule gates passed, three had a critic injection (a consistency call each) and four reach the
    # vision judge (the broken one is rejected on its measurements). The junk deck has an injection and would
    # have cost two more calls.
    assert len(calls) == 3 + 4
    assert set(verdicts(root)["en-169-junk"]) == {"constraint", "content"}


def test_unreachable_judge_stops_before_any_verdict(fake_scenario_run: Path) -> None:
    with_judges(fake_scenario_run, "http://127.0.0.1:9/v1")
    assert main([str(fake_scenario_run)]) == 2
    assert not (fake_scenario_run / "units" / STAGE).exists()


# ---------------------------------------------------------------- config and the pipeline stage


def test_config_comes_from_the_run_then_overrides(fake_scenario_run: Path, tmp_path: Path) -> None:
    cfg = load_config(RunReader(fake_scenario_run), ["filters.min_constraint_score=0.5", "roles.judge.model=glm-4.6"])
    assert (cfg.llm.backend, cfg.filters.min_constraint_score, cfg.roles["judge"].model) == ("scripted", 0.5, "glm-4.6")
    assert load_config(RunReader(tmp_path)).filters.gates == list(GATES)  # no config.yaml: defaults
    with pytest.raises(ConfigError, match="unknown \\['vibes'\\]"):
        load_config(RunReader(fake_scenario_run), ["filters.gates=[vibes]"])
    with pytest.raises(ConfigError, match="nonsense"):
        load_config(RunReader(fake_scenario_run), ["filters.nonsense=1"])
    with pytest.raises(RunIncomplete, match="run the rollouts stage first"):
        judge(tmp_path)
