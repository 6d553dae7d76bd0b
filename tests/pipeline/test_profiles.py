"""The whole pipeline against the strict fake of each profile: nothing refused, inspections seen as images, and
every exported sample's trained turns equal to the requests the teacher was sent (train.parity)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.llm.conversation import IMAGE_NOTE
from fakes.model import every_role
from fakes.openai_server import FakeOpenAIServer, Reply
from tests.pipeline.helpers import every_role_command, run

pytestmark = [pytest.mark.slow, pytest.mark.chromium, pytest.mark.swift]


def thinking(body: dict[str, Any]) -> Reply:
    """every_role, with reasoning on the agents' turns (as GLM-4.6V's reasoning parser returns it)."""
    reply = every_role(body)
    first = body["messages"][0]["content"]
    agent = isinstance(first, str) and first.startswith(("You are the Researcher", "You are the Presenter"))
    return replace(reply, reasoning=f"Turn {len(body['messages'])}: what next?") if agent else reply


def _inspections_seen(requests: list[dict[str, Any]]) -> int:
    """Requests in which an inspect_slide result is followed by its render as an image part of a user message."""
    seen = 0
    for body in requests:
        messages = body["messages"]
        for before, after in zip(messages, messages[1:]):
            parts = after["content"] if isinstance(after["content"], list) else []
            if before["role"] == "tool" and after["role"] == "user" and parts and parts[0].get("text") == IMAGE_NOTE:
                seen += any(p.get("type") == "image_url" for p in parts)
    return seen


@pytest.mark.parametrize(("strict", "llm", "policy"), [("openai", "openai", every_role), ("vllm-glm", "vllm", thinking)])
def test_synthesize_against_the_strict_fake_of_each_profile(
    tmp_path: Path, request: pytest.FixtureRequest, strict: str, llm: str, policy
) -> None:
    if (
        strict == "openai"
    ):  # the very run test_spending reads: every_role_command(root, url) with every_role (tests/pipeline/conftest.py)
        shared = request.getfixturevalue("every_role_synthesis")
        run_dir, done, requests, refused = shared.root, shared.done, shared.requests, shared.refused
    else:
        run_dir = tmp_path / "run"
        with FakeOpenAIServer(policy, strict=strict, model="fake", max_model_len=65_536) as srv:
            done = run(*every_role_command(run_dir, srv.url, "llm.max_tokens=512", llm=llm))  # limit=3: two rollouts
            requests, refused = list(srv.requests), list(srv.refused)
    assert done.returncode == 0, done.stderr[-3000:]
    assert refused == []
    assert _inspections_seen(requests) > 0
    if strict == "vllm-glm":
        assert any("reasoning_content" in m for body in requests for m in body["messages"])
    parity = run(sys.executable, "-m", "train.parity", str(run_dir), "--json")
    figures = json.loads(parity.stdout)
    assert parity.returncode == 0 and figures["ok"], parity.stdout + parity.stderr[-2000:]
    assert figures["turns_checked"] > 0 and figures["turns_equal"] == figures["turns_checked"]
    assert figures["requests_verified"] == figures["turns_checked"]  # each rebuilt request is the one sent
    export = json.loads((run_dir / "stats" / "export.json").read_text())
    assert export["parity"]["turns_checked"] == figures["turns_checked"] and export["train_samples"] > 0
