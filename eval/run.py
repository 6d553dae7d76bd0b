"""`python -m eval.run`: held-out tasks -> decks (no critic) -> scores -> tables and Figure 6.

    python -m eval.run tasks=runs/demo run.name=eval-scripted            # offline: scripted policy and judge
    python -m eval.run tasks=runs/demo llm=vllm llm.base_url=http://HOST:8000/v1 llm.model=glm-sft \
        judge=openai diversity.encoder=facebook/dinov2-base run.name=eval-glm-sft

See configs/eval.yaml and docs/evaluation.md.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from eval import generation as _generation  # noqa: F401  (register the stages)
from eval import reporting as _reporting
from eval import scoring as _scoring
from eval.config import validate
from pipeline.stages import run_stages

STAGES = [_generation.STAGE, _scoring.STAGE, _reporting.STAGE]


@hydra.main(config_path="../configs", config_name="eval", version_base=None)
def main(cfg: DictConfig) -> None:
    run_stages(cfg, STAGES, "eval", validate)


if __name__ == "__main__":
    main()
