"""Whole synthesis runs that several pipeline tests read, each built once per session.

A test that changes a shared run works on a copy of it (shutil.copytree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.model import every_role
from fakes.openai_server import FakeOpenAIServer
from tests.pipeline.helpers import FakeSynthesis, every_role_command, filter_and_export, run, synthesize_scripted

BROKEN_TOOL_RUNNER = "rollouts.runner=fakes.runner:BrokenToolRunner"  # in the config hash: every stage names it


@pytest.fixture(scope="session")
def scripted_rollouts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tasks and rollouts stages of `python -m pipeline.synthesize limit=3` with the scripted policy and the default
    config (read it, do not change it): what the acceptance tests' filtered and unfiltered runs have in common. Its
    runner is the real one with a bug planted in write_file for the first rollout it plays (test_tool_crash)."""
    root = tmp_path_factory.mktemp("scripted-rollouts") / "run"
    synthesize_scripted(root, "stages=[tasks,rollouts]", "ray.num_workers=1", BROKEN_TOOL_RUNNER)
    return root


@pytest.fixture(scope="session")
def scripted_synthesis(scripted_rollouts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """That run (a copy) through the default filters, the export and the report (read it, do not change it): the
    acceptance test's filtered run, and the run test_report's browser test is shown."""
    return filter_and_export(scripted_rollouts, tmp_path_factory.mktemp("scripted-synthesis") / "run", BROKEN_TOOL_RUNNER)


@pytest.fixture(scope="session")
def every_role_synthesis(tmp_path_factory: pytest.TempPathFactory) -> FakeSynthesis:
    """every_role_command (tests/pipeline/helpers.py: limit=3, every role played by the fake model, priced) against the strict
    fake of the openai profile (read it, do not change it): test_spending's uninterrupted run, test_profiles' openai run."""
    root = tmp_path_factory.mktemp("every-role-synthesis") / "whole"
    with FakeOpenAIServer(every_role, strict="openai") as srv:
        done = run(*every_role_command(root, srv.url))
        return FakeSynthesis(root, done, list(srv.requests), list(srv.refused), srv.served)
