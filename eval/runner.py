"""The evaluation runner: the synthesis DeckRunner with no critic (the paper uses none at inference).

Loaded by the rollout workers (`rollouts.runner=eval.runner:EvalRunner`): the same
renderer, research state, models and Rollout records as synthesis, with `critic=none`
(the agent's own reflection only) and the system's ablation modes (`agents`, `reflection`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agents.config import AgentSetup
from core.protocols import Runner
from core.records import Rollout, Task
from critic.config import CriticConfig, CriticMode
from eval.config import EvalConfig
from pipeline.config import SynthesizeConfig
from pipeline.runner import DeckRunner


def inference_config(cfg: EvalConfig) -> SynthesizeConfig:
    """The eval config's agent setup, whole, as a DeckRunner reads it, with the critic off."""
    setup = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(AgentSetup)}
    return SynthesizeConfig(**setup, critic=CriticConfig(mode=CriticMode.none))


class EvalRunner:
    def __init__(self, cfg: EvalConfig, run_dir: Path):
        self.runner: Runner = DeckRunner(inference_config(cfg), run_dir)

    async def start(self) -> None:
        await self.runner.start()

    async def rollout(self, task: Task, workspace: Path) -> Rollout:
        return await self.runner.rollout(task, workspace)

    async def close(self) -> None:
        await self.runner.close()
