"""docs/extending.md, tested: each extension is one module plus one line, and flows through.

Every test adds a throwaway defect code, stage, tool, research backend or model backend the way the doc says, and
checks it where users meet it (the gate's test is tests/filters/test_gate_extension.py).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from agents.config import SandboxConfig, ToolsConfig
from agents.research.backends import ResearchBackend
from agents.research.runtime import RESOURCE_KEY, Research, build_research, validate_tools_config
from agents.research.search import SEARCH
from agents.run import generate
from agents.run import load_config as load_generate_config
from agents.sandbox import Workspace
from agents.tools import Tool, ToolContext
from agents.tools.toolsets import TOOLS, toolset_for
from core.config import PROJECT_ROOT, ConfigError, LLMConfig
from core.defects import DEFECT_CODES, Defect, DefectCode, DefectSource
from core.llm.players import BACKENDS, Chat, check_backends
from core.records import Constraints, Task, ToolCall
from core.run.context import RunContext
from core.run.reader import RunReader
from core.seams.research import SearchHit
from core.seams.review import Inspection
from critic.critic import RulesCritic
from fakes.runs import RolloutSpec, RunSpec, build_run, varied_run
from filters.run import STAGE as FILTERS_STAGE
from filters.run import main as filters_main
from pipeline.config import store_schema
from pipeline.preflight import preflight
from pipeline.report.stage import make_report
from pipeline.spending import usage_stats
from pipeline.stages import run_stages
from pipeline.synthesize import STAGES


def synthesize_config(*overrides: str):
    store_schema()
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
        return compose("synthesize", overrides=list(overrides))


def test_a_new_defect_code_reaches_the_critic_and_the_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(
        DEFECT_CODES,
        "glare",
        DefectCode("glare", DefectSource.slide, "style", "minor", "a white box glares", "tone the box down"),
    )
    measured = (Defect("glare", "minor", "div.box", "98% white"),)
    review = asyncio.run(RulesCritic().review(Inspection("inspect_slide", "slides/slide_01.html", "", measured), tmp_path, "en"))
    assert [(f.category, f.severity, f.fix) for f in review.findings] == [("style", "minor", "tone the box down")]

    build_run(tmp_path, varied_run(2))
    defects_file = next(tmp_path.glob("rollouts/*/deck_defects.json"))
    deck = json.loads(defects_file.read_text())
    deck["slides"][0]["defects"].append({"code": "glare", "severity": "minor", "element": "div.box"})
    defects_file.write_text(json.dumps(deck))
    make_report(RunReader(tmp_path))
    assert "glare" in (tmp_path / "report" / "index.html").read_text()


def test_a_new_stage_runs_in_the_recipe_order(tmp_path: Path) -> None:
    def count_tasks(ctx: RunContext) -> dict[str, Any]:
        (ctx.store.path("stats")).mkdir(exist_ok=True)
        ctx.store.path("stats", "count.json").write_text(json.dumps({"tasks": 0}))
        return {"tasks": 0}

    recipe = {**STAGES, "count": count_tasks}
    cfg = synthesize_config(f"run.dir={tmp_path}", "tracking=disabled")
    run_stages(cfg, recipe, "synthesize", preflight, ["count"])
    assert json.loads((tmp_path / "stats" / "count.json").read_text()) == {"tasks": 0}
    assert "stage count: {'tasks': 0}" in (tmp_path / "logs" / "synthesize.log").read_text()


def test_a_new_tool_is_offered_to_its_role_and_called_as_a_model_calls_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def word_count(ctx: ToolContext, path: str) -> str:
        """Count the words of a workspace file."""
        return f"{path}: {len(ctx.workspace.read_bytes(path, 1 << 20).split())} words"

    monkeypatch.setitem(TOOLS, "word_count", Tool.from_function(word_count, "presenter"))  # its line in a TOOLS list
    (tmp_path / "notes.md").write_text("three small words")
    presenter = toolset_for("presenter")
    assert "word_count" in [s["function"]["name"] for s in presenter.schemas()]
    assert "word_count" not in toolset_for("researcher").tools
    call = ToolCall("call_1", "word_count", json.dumps({"path": "notes.md"}))
    observation = asyncio.run(presenter.call(ToolContext(Workspace(tmp_path), "presenter"), call))
    assert observation.text == "notes.md: 3 words" and not observation.is_error


async def search_echo(research: Research, query: str, max_results: int, time_range: str | None) -> list[SearchHit]:
    return [SearchHit(f"{query} {n}", f"https://example.org/{n}", f"all about {query}") for n in range(1, max_results + 1)]


def test_a_new_research_backend_is_picked_by_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(SEARCH, "echo", ResearchBackend(search_echo))  # its line in SEARCH
    config = ToolsConfig(search_backend="echo", cache="off", sandbox=SandboxConfig(jail="none"))
    ctx = ToolContext(Workspace(tmp_path), "researcher", {RESOURCE_KEY: build_research(config, tmp_path)})
    call = ToolCall("call_1", "search_web", json.dumps({"query": "tides", "max_results": 2}))
    observation = asyncio.run(toolset_for("researcher").call(ctx, call))
    assert "2. tides 2" in observation.text and "https://example.org/2" in observation.text and not observation.is_error
    with pytest.raises(ConfigError, match=r"tools.search_backend='ekko': unknown; known: \[.*'echo'"):
        validate_tools_config(ToolsConfig(search_backend="ekko"))

    monkeypatch.setitem(SEARCH, "echo", ResearchBackend(search_echo, key_of="tavily"))  # a backend that needs a service's key
    monkeypatch.delenv(config.services["tavily"].api_key_env, raising=False)
    with pytest.raises(ConfigError, match="tools.search_backend='echo' needs an API key"):
        validate_tools_config(config)


class InProcessTransport:
    """docs/extending.md's new backend: a model answering in-process (here a rule playing both agents and the
    consistency judge: a manuscript, one slide, then finalize; every finding addressed)."""

    calls: list[str] = []  # the roles it answered, in order (the test's own count)

    def __init__(self, cfg: LLMConfig) -> None:
        self.model = cfg.model

    async def complete(self, body: dict[str, Any], base_url: str) -> dict[str, Any]:
        tools = {t["function"]["name"] for t in body.get("tools", ())}
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if not tools:
            self.calls.append("judge")
            prompt = body["messages"][-1]["content"]
            numbered = re.findall(r"^(\d+)\. \[", prompt if isinstance(prompt, str) else "", re.MULTILINE)
            checks = [{"finding": int(n), "status": "addressed", "reason": "the diff changes it"} for n in numbered]
            return _reply(json.dumps({"findings": checks, "passed": True}))
        role = "presenter" if "inspect_slide" in tools else "researcher"
        self.calls.append(role)
        plan = {
            "researcher": [
                ("write_file", {"path": "manuscript.md", "content": MANUSCRIPT}),
                ("finalize", {"outcome": "manuscript.md"}),
            ],
            "presenter": [
                ("write_file", {"path": "slides/slide_01.html", "content": SLIDE}),
                ("finalize", {"outcome": "slides/"}),
            ],
        }[role]
        name, arguments = plan[min(turn, len(plan) - 1)]
        return _reply(
            "", [{"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]
        )

    async def models(self, base_url: str) -> list[dict[str, Any]]:
        return [{"id": self.model}]

    async def aclose(self) -> None:
        return None


MANUSCRIPT = "# Tides\n\nThe moon pulls the sea toward it, and the water rises twice a day on most coasts.\n"
SLIDE = "<html><body style='margin:0;width:1280px;height:720px;overflow:hidden'><h1 style='margin:80px'>Tides</h1></body></html>"


def _reply(content: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content} | ({"tool_calls": tool_calls} if tool_calls else {})
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}


@pytest.mark.chromium
def test_a_new_backend_plays_an_agent_and_a_judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(BACKENDS, "inproc", Chat(InProcessTransport))  # the doc's one line
    monkeypatch.setattr(InProcessTransport, "calls", [])
    configs = tmp_path / "configs"
    (configs / "llm").mkdir(parents=True)
    (configs / "llm" / "inproc.yaml").write_text("backend: inproc\nbase_url: none://inproc\nmodel: inproc-1\n")
    check_backends(synthesize_config(f"hydra.searchpath=[file://{configs}]", "llm=inproc"))  # selectable by name

    out = tmp_path / "deck"
    cfg = load_generate_config(["llm.backend=inproc", "llm.base_url=none://inproc", "llm.model=inproc-1"])
    task = Task("deck-tides", "manual", "A one-slide deck on tides.", "en", (), Constraints(1, 1, "16:9", "en"))
    asyncio.run(generate(task, cfg, out))
    agent_calls = [r for r in InProcessTransport.calls if r != "judge"]
    assert "researcher" in agent_calls and "presenter" in agent_calls
    usage = json.loads((out / "stats" / "usage.json").read_text())
    assert usage["stages"]["generate"]["roles"]["agent"]["calls"] == len(agent_calls)

    revised = tuple(RolloutSpec(f"en-revised-{i}", slides=2, revision=answer) for i, answer in enumerate(("fix", "ignore")))
    scripted = {"llm": {"backend": "scripted", "base_url": "none://scripted", "model": "scripted-policy"}}
    run = build_run(tmp_path / "run", RunSpec(revised, gates=None, config=scripted, verdicts=False))
    assert (
        filters_main([str(run), "filters.gates=[consistency]", "roles.judge.backend=inproc", "roles.judge.model=inproc-1"]) == 0
    )
    judged = InProcessTransport.calls.count("judge")
    assert judged > 0
    assert usage_stats(run)["stages"][FILTERS_STAGE]["roles"]["judge"]["calls"] == judged
