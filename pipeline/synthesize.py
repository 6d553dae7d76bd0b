"""`python -m pipeline.synthesize`: tasks -> rollouts -> filters -> export -> report."""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from pipeline import exporting as _export, filtering as _filters, report as _report  # noqa: F401  (stages)
from pipeline import rollouts as _rollouts, tasks as _tasks  # noqa: F401  (stages)
from pipeline.config import validate
from pipeline.stages import run_stages


@hydra.main(config_path="../configs", config_name="synthesize", version_base=None)
def main(cfg: DictConfig) -> None:
    run_stages(cfg, list(cfg.stages), "synthesize", validate)


if __name__ == "__main__":
    main()
