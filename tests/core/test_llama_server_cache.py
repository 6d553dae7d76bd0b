"""The local server tells how much of each prompt it reused (core/llm/llama_server.py): the real server, SmolLM2."""

from __future__ import annotations

import re
from typing import Any, Iterator

import httpx
import pytest

from core.llm.llama_server import BOUNDED
from core.llm.local_server import LocalServer, ServerSpec, bundled_model

pytestmark = pytest.mark.real_model

SYSTEM = {"role": "system", "content": "You are a helpful assistant who writes slides about the sea. " * 4}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "write_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    }
]
TEMPLATE_TOKENS = 8  # "<|im_end|>\n<|im_start|>user\n" and the like, between one prompt and the next


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    local = LocalServer(ServerSpec(bundled_model(), BOUNDED, 2048, "smol"), tmp_path_factory.mktemp("server") / "server.log")
    url = local.start()
    try:
        with httpx.Client(base_url=url.removesuffix("/v1"), trust_env=False, timeout=120) as http:
            yield http
    finally:
        local.stop()


def chat(http: httpx.Client, messages: list[dict[str, Any]], **request: Any) -> dict[str, Any]:
    response = http.post(
        "/v1/chat/completions", json={"model": "smol", "messages": messages, "max_tokens": 8, "temperature": 0, **request}
    )
    response.raise_for_status()
    return response.json()


def cached(reply: dict[str, Any]) -> int:
    return reply["usage"]["prompt_tokens_details"]["cached_tokens"]


def totals(http: httpx.Client) -> dict[str, int]:
    page = http.get("/metrics").text
    counters = dict(re.findall(r"^# TYPE (\S+) (\S+)$", page, re.M))
    assert counters == {
        "deckforge_llama_server_prompt_tokens_total": "counter",
        "deckforge_llama_server_prompt_tokens_cached_total": "counter",
    }
    assert all(f"# HELP {name} " in page for name in counters)
    return {name: int(value) for name, value in re.findall(r"^(\w+) (\d+)$", page, re.M)}


def test_a_conversation_asked_again_and_grown_reuses_the_state_it_left(server: httpx.Client) -> None:
    before = totals(server)
    conversation = [SYSTEM, {"role": "user", "content": "Name three colours of the sea."}]
    first, again = chat(server, conversation), chat(server, conversation)
    grown = conversation + [again["choices"][0]["message"], {"role": "user", "content": "And of the sky?"}]
    third = chat(server, grown)

    assert first["usage"]["prompt_tokens"] == again["usage"]["prompt_tokens"] > 50
    assert again["usage"]["prompt_tokens"] - 2 <= cached(again) <= again["usage"]["prompt_tokens"]
    assert cached(third) >= again["usage"]["prompt_tokens"] - TEMPLATE_TOKENS
    assert cached(third) < third["usage"]["prompt_tokens"]  # the new message was evaluated
    after = totals(server)
    replies = [first, again, third]
    assert after["deckforge_llama_server_prompt_tokens_total"] - before["deckforge_llama_server_prompt_tokens_total"] == sum(
        r["usage"]["prompt_tokens"] for r in replies
    )
    assert after["deckforge_llama_server_prompt_tokens_cached_total"] - before[
        "deckforge_llama_server_prompt_tokens_cached_total"
    ] == sum(map(cached, replies))


def test_a_tool_reply_counts_as_cached_only_what_earlier_replies_left(server: httpx.Client) -> None:
    """The handler first asks the model whether to call a tool, then writes the call or the message from that
    same prompt: the prompt that question evaluated is not reported as cached."""
    conversation = [
        {"role": "system", "content": "You write files for the user. " * 6},
        {"role": "user", "content": "Write a.html"},
    ]
    first = chat(server, conversation, tools=TOOLS, tool_choice="auto")
    again = chat(server, conversation, tools=TOOLS, tool_choice="auto")
    assert first["usage"]["prompt_tokens"] > 100 and cached(first) < TEMPLATE_TOKENS  # its system prompt is new here
    assert cached(again) >= again["usage"]["prompt_tokens"] - TEMPLATE_TOKENS


def test_a_conversation_taken_up_after_another_reuses_its_state_from_the_cache(server: httpx.Client) -> None:
    """Rollouts take turns on one server: the state one left is restored from the RAM cache of states."""
    ours = [SYSTEM, {"role": "user", "content": "Name a fish of the deep sea."}]
    theirs = [{"role": "system", "content": "You answer in one word. " * 8}, {"role": "user", "content": "Name a bird."}]
    first = chat(server, ours)
    chat(server, theirs)
    grown = ours + [first["choices"][0]["message"], {"role": "user", "content": "And a crab?"}]
    assert cached(chat(server, grown)) >= first["usage"]["prompt_tokens"] - TEMPLATE_TOKENS
