"""`python -m eval.run`: held-out tasks -> decks (no critic) -> scores and checklists -> tables and Figure 6.

    python -m eval.run tasks=runs/demo run.name=eval-scripted            # offline: scripted policy and judge
    python -m eval.run tasks=runs/demo llm=vllm llm.base_url=http://HOST:8000/v1 llm.model=glm-sft \
        judge=openai diversity.encoder=facebook/dinov2-base run.name=eval-glm-sft

See configs/eval.yaml and docs/evaluation.md.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from agents.config import ToolsConfig
from agents.research.runtime import validate_tools_config
from core.config import to_typed
from core.llm.players import check_backends
from eval import generation, report, scoring
from eval.checklist import stage as checklist
from eval.config import store_schema, validate
from pipeline.stages import StageFn, run_stages

STAGES: dict[str, StageFn] = {  # the recipe, in order
    generation.STAGE: generation.generate,  # each task -> a deck by the agents under test (no critic)
    scoring.STAGE: scoring.score,  # each deck -> constraint, content, style and diversity scores
    checklist.STAGE: checklist.checklist,  # each deck -> its checklist answered yes / no / not applicable, scored
    report.STAGE: report.report,  # the scores -> tables and Figure 6
}


def preflight(cfg: DictConfig) -> None:
    """The config (eval.config.validate), then what it names against this install: the model backends, the
    research tools' backends and keys, the commands' jail; ConfigError naming the key."""
    validate(cfg)
    check_backends(cfg)
    validate_tools_config(to_typed(ToolsConfig, cfg.tools))


@hydra.main(config_path="../configs", config_name="eval", version_base=None)
def main(cfg: DictConfig) -> None:
    run_stages(cfg, STAGES, "eval", preflight)


if __name__ == "__main__":
    store_schema()  # configs/eval.yaml names it; Hydra composes when main is called
    main()
