"""Fixtures for pipeline stages: a composed config and an opened run in a temp dir."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from hydra import compose, initialize_config_dir

from core.config import PROJECT_ROOT
from core.run import RunContext, open_run
from pipeline import config as _schema  # noqa: F401  (registers synthesize_schema)
from pipeline.config import validate


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., RunContext]:
    """open_run() on a composed synthesize config with `overrides`, in tmp_path/run."""

    def make(*overrides: str) -> RunContext:
        with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
            cfg = compose("synthesize", overrides=[f"run.dir={tmp_path / 'run'}", "tracking=disabled", *overrides])
        validate(cfg)
        return open_run(cfg, job_type="test")

    return make
