"""The describer and judge a `JudgeConfig` names (scripted or model clients), and their endpoint check."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

from core.config import LLMConfig
from core.llm import ModelClient
from core.models import client_for, is_scripted
from eval.config import JudgeConfig, describer_config
from eval.judge import (
    Describer,
    Judge,
    JudgeCache,
    ModelDescriber,
    ModelJudge,
    SlideJudging,
)
from eval.scripted_judge import ScriptedDescriber, ScriptedJudge

ROLES = ("describer", "judge")


def cache_root(cfg: JudgeConfig, run_dir: Path) -> Path:
    return Path(cfg.cache_dir).expanduser().resolve() if cfg.cache_dir else run_dir / "judge_cache"


def judge_endpoints(cfg: JudgeConfig) -> dict[str, LLMConfig]:
    """The model endpoints of the describer and the judge, by role (scripted ones left out)."""
    found = {"describer": describer_config(cfg), "judge": cfg.endpoint}
    return {role: c for role, c in found.items() if not is_scripted(c)}


async def check_endpoints(found: dict[str, LLMConfig]) -> None:
    """Each endpoint lists its models (raises core.llm_types.ModelError naming the role and URL)."""
    for role, llm in found.items():
        client = client_for(llm, role)
        try:
            await client.list_models()
        finally:
            await client.aclose()


def _client(llm: LLMConfig, role: str, stack: AsyncExitStack) -> ModelClient | None:
    client = client_for(llm, role)
    if client is not None:
        stack.push_async_callback(client.aclose)
    return client


def build_judging(cfg: JudgeConfig, cache: Path, stack: AsyncExitStack) -> SlideJudging:
    """The describer and judge of `cfg` (model clients are closed by `stack`; their calls count into the
    unit being worked on, core.metering), with their cache."""
    described = describer_config(cfg)
    describe_with, judge_with = _client(described, "describer", stack), _client(cfg.endpoint, "judge", stack)
    describer: Describer = (
        ScriptedDescriber() if describe_with is None else ModelDescriber(describe_with, described, cfg.json_retries)
    )
    judge: Judge = ScriptedJudge() if judge_with is None else ModelJudge(judge_with, cfg.endpoint, cfg.json_retries)
    return SlideJudging(describer, judge, JudgeCache(cache), cfg.max_concurrency)
