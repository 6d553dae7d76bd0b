"""The chat format the local server adds (core/llm/llama_server.py), driven with a recording Llama.

The recording Llama stands in for the model only: the prompt llama-cpp-python's handler renders
and the completions it asks for are what is checked."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
from llama_cpp import llama_chat_format  # noqa: E402

from core.llm.llama_server import BOUNDED, TOTALS, bounded_chatml_function_calling, install  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {"name": "write_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    }
]
MESSAGES = [
    {"role": "system", "content": "You write slides."},
    {"role": "user", "content": "Write <h1>Tides</h1> into a.html"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": '{"path": "a.html"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Wrote 14 bytes to a.html."},
]


@pytest.fixture(autouse=True)
def installed() -> None:
    install()  # as the server process does before it serves


def test_the_server_adds_its_format_when_it_starts_and_may_add_it_again() -> None:
    from llama_cpp.server import app

    install()
    handlers = llama_chat_format.LlamaChatCompletionHandlerRegistry()
    assert handlers.get_chat_completion_handler_by_name(BOUNDED) is bounded_chatml_function_calling
    assert [route.path for route in app.router.routes].count("/metrics") == 1


def test_the_app_answers_with_the_cached_tokens_the_usage_holds() -> None:
    """The server's app answers through llama-cpp-python's TypedDicts, which drop the keys they do not declare."""
    from typing import Union

    import llama_cpp
    from pydantic import TypeAdapter

    usage = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10, "prompt_tokens_details": {"cached_tokens": 7}}
    reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [], "usage": usage}
    answer = TypeAdapter(Union[llama_cpp.ChatCompletion, str])  # as the app declares its chat route's answer
    assert answer.dump_python(answer.validate_python(reply))["usage"] == usage


def test_the_metrics_page_counts_in_prometheus_text() -> None:
    prompt, cached = TOTALS.prompt, TOTALS.cached
    TOTALS.add(120, 100)
    page = TOTALS.render().splitlines()
    name = "deckforge_llama_server_prompt_tokens_cached_total"
    assert page[page.index(f"# TYPE {name} counter") + 1] == f"{name} {cached + 100}"
    assert f"deckforge_llama_server_prompt_tokens_total {prompt + 120}" in page
    assert not any("llamacpp:" in line for line in page)  # llama.cpp's C++ server's names, counting otherwise


class RecordingLlama:
    """Answers 'message:' to the tool-or-message question, then prose of `words` tokens at most."""

    verbose = False

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.ids = itertools.count()

    def create_completion(self, prompt: str, max_tokens: int | None = None, **kwargs: Any) -> dict[str, Any]:
        self.calls.append({"prompt": prompt, "max_tokens": max_tokens})
        text, used = ("message", 2) if len(self.calls) == 1 else ("and so on " * 40, min(max_tokens or 400, 400))
        return {
            "id": f"cmpl-{next(self.ids)}",
            "object": "text_completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"text": text, "index": 0, "logprobs": None, "finish_reason": "length" if used == max_tokens else "stop"}
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": used, "total_tokens": 50 + used},
        }


def test_the_prompt_keeps_html_and_quotes_as_written() -> None:
    llama = RecordingLlama()
    bounded_chatml_function_calling(llama, messages=MESSAGES, tools=TOOLS, tool_choice="auto", max_tokens=64)
    prompt = llama.calls[0]["prompt"]
    assert '{"path": "a.html"}' in prompt and "<h1>Tides</h1>" in prompt and "&#34;" not in prompt and "&lt;" not in prompt


def test_everything_generated_for_one_reply_shares_max_tokens() -> None:
    llama = RecordingLlama()
    reply = bounded_chatml_function_calling(llama, messages=MESSAGES, tools=TOOLS, tool_choice="auto", max_tokens=64)
    assert [c["max_tokens"] for c in llama.calls] == [64, 62]  # llama-cpp-python's own handler asks for None (no limit)
    assert reply["choices"][0]["finish_reason"] == "length"


def test_the_state_cache_weighs_the_logits_each_entry_copies() -> None:
    """llama-cpp-python's RAM cache counts llama.cpp's state only; each entry also holds a logits buffer
    (96 MiB for SmolLM2), and the uncounted copies grew the server to 20 GB in CI."""
    import llama_cpp
    import numpy as np

    cache = llama_cpp.LlamaRAMCache(capacity_bytes=3 << 20)  # the name the server builds its cache from
    for first_token in range(4):
        cache[(first_token, 1, 2)] = llama_cpp.LlamaState(
            input_ids=np.zeros(8, dtype=np.intc),
            scores=np.zeros((1 << 18,), dtype=np.single),  # 1 MiB
            n_tokens=3,
            llama_state=b"x" * 1024,
            llama_state_size=1024,
            seed=0,
        )
    assert len(cache.cache_state) == 2  # each entry weighs just over 1 MiB: two fit, the older ones went
    assert (3, 1, 2) in cache
