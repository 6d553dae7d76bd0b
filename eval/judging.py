"""The describer and judge a `JudgeConfig` names (scripted or model clients), and their endpoint check."""

from __future__ import annotations

from pathlib import Path

from core.config import LLMConfig
from core.models import Play, Players
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
    """The endpoints of the describer and the judge, by role."""
    return {"describer": describer_config(cfg), "judge": cfg.endpoint}


def build_judging(cfg: JudgeConfig, cache: Path, players: Players) -> SlideJudging:
    """The describer and judge of `cfg`, each played as its endpoint's backend says (`players` closes the
    clients; their calls count into the unit being worked on, core.metering), with their cache."""
    described = describer_config(cfg)
    describer: Describer = players.play_endpoint(
        described,
        "describer",
        Play(lambda client: ModelDescriber(client, described, cfg.json_retries), lambda _: ScriptedDescriber()),
    )
    judge: Judge = players.play_endpoint(
        cfg.endpoint,
        "judge",
        Play(lambda client: ModelJudge(client, cfg.endpoint, cfg.json_retries), lambda _: ScriptedJudge()),
    )
    return SlideJudging(describer, judge, JudgeCache(cache), cfg.max_concurrency)
