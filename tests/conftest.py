"""Test-wide settings (nothing reaches a hub or wandb's servers) and shared fixtures."""

import os

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from pathlib import Path  # noqa: E402
from typing import Any, AsyncIterator, Callable  # noqa: E402

import pytest  # noqa: E402
import ray  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

from core.config import PROJECT_ROOT  # noqa: E402
from core.llm.client import ModelClient, close_models  # noqa: E402
from core.run.context import RunContext, open_run  # noqa: E402
from pipeline.config import store_schema  # noqa: E402
from pipeline.preflight import preflight  # noqa: E402

pytest_plugins = ["tests.rendered"]  # the session Renderer and the fixture slides rendered once


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., RunContext]:
    """open_run() on a composed synthesize config with `overrides`, in tmp_path/run."""

    def make(*overrides: str) -> RunContext:
        store_schema()
        with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
            cfg = compose("synthesize", overrides=[f"run.dir={tmp_path / 'run'}", "tracking=disabled", *overrides])
        preflight(cfg)
        return open_run(cfg, job_type="test")

    return make


@pytest.fixture(scope="module")
def embedded_ray():
    """A local Ray instance for a test module; workers import the project and tests."""
    ray.init(
        address="local",  # its own, not another test process's (pytest -n 2)
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}},
    )
    yield
    ray.shutdown()


@pytest.fixture
async def close_model_clients(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Close every ModelClient the test made (its HTTP session) when it ends, in its event loop: a session left
    open is collected later, during another test, and asyncio logs it there (into that test's stderr)."""
    made: list[ModelClient] = []
    init = ModelClient.__init__

    def tracked(self: ModelClient, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(ModelClient, "__init__", tracked)
    yield
    await close_models(*made)
