"""`python -m pipeline.synthesize`: tasks -> rollouts -> filters -> export -> report."""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig

from core.config import ConfigError
from core.run import open_run
from core.store import ConfigMismatch
from pipeline import config as _schema  # noqa: F401  (registers the structured config)
from pipeline.config import validate
from pipeline.stages import REGISTRY

log = logging.getLogger("pipeline.synthesize")


@hydra.main(config_path="../configs", config_name="synthesize", version_base=None)
def main(cfg: DictConfig) -> None:
    try:
        validate(cfg)
        ctx = open_run(cfg, job_type="synthesize")
    except (ConfigError, ConfigMismatch) as exc:
        logging.getLogger().handlers or logging.basicConfig()
        log.error("%s", exc)
        sys.exit(2)
    try:
        for name in cfg.stages:
            if name not in REGISTRY:
                log.warning("stage %r is not built yet: stopping after %s", name, list(REGISTRY) or "none")
                break
            figures = REGISTRY[name](ctx)
            ctx.tracker.log({f"{name}/{k}": v for k, v in figures.items() if isinstance(v, (int, float))})
            log.info("stage %s: %s", name, figures)
    finally:
        ctx.close()


if __name__ == "__main__":
    main()
