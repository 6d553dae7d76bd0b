"""`python -m core.llm.llama_server ARGS`: llama-cpp-python's OpenAI-compatible server, with one more chat format.

llama-cpp-python's `chatml-function-calling` (tool calling for ChatML models: the tool schemas in the
system prompt, the call names and JSON arguments constrained by grammars) passes `max_tokens=None`
to every completion it makes, so a rambling model writes until its context is full: thousands of
tokens, minutes on a CPU, while the server answers nobody else. `bounded-chatml-function-calling`
is that handler with the request's `max_tokens` shared by everything it generates for one reply.

That handler also renders its prompt template with Jinja's autoescape on (`select_autoescape` is
true for templates made from a string), so the model would read its own slides' HTML as
`&lt;div&gt;` and the quotes of its earlier calls as `&#34;`, and copy them (seen here: arguments
full of `&amp;amp;`). This process turns that autoescape off.

Its RAM cache of model states (`--cache true`) weighs each entry by llama.cpp's own state only, but
each entry also copies the model's logits buffer (n_batch x vocab floats: 96 MiB for SmolLM2, 20x the
state it counts), so a 2 GiB cache held 20 GB here. This process counts the whole entry.

llama.cpp evaluates only the part of a prompt that its loaded state (or one from that cache) does not
already hold. Each reply says how many prompt tokens it so reused, as vLLM and OpenAI do
(`usage.prompt_tokens_details.cached_tokens`), and `GET /metrics` keeps the running totals.
`install()` makes these changes to llama-cpp-python, in the server process (core.llm.local_server starts
it as `python -m core.llm.llama_server`); importing this module changes nothing.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

import jinja2
import llama_cpp
from fastapi import Depends
from fastapi.responses import PlainTextResponse
from llama_cpp import llama_chat_format, llama_types
from llama_cpp.server import app as server_app
from llama_cpp.server.__main__ import main as serve

BOUNDED = "bounded-chatml-function-calling"


class _Jinja:
    """jinja2 as llama_chat_format sees it in this process: the same, but autoescape is never selected."""

    def __getattr__(self, name: str) -> Any:
        return getattr(jinja2, name)

    @staticmethod
    def select_autoescape(*_: Any, **__: Any) -> bool:
        return False


class _WeighedRAMCache(llama_cpp.LlamaRAMCache):
    """llama-cpp-python's RAM cache of model states, with each entry weighed by all it holds."""

    @property
    def cache_size(self) -> int:
        return sum(state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes for state in self.cache_state.values())


class _Budget:
    """A Llama whose completions share one budget of new tokens (None: unbounded)."""

    def __init__(self, llama: Any, max_tokens: int | None):
        self._llama, self._left = llama, max_tokens

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, *args: Any, **kwargs: Any) -> Any:
        if self._left is not None:
            kwargs["max_tokens"] = max(1, self._left)
        completion = self._llama.create_completion(*args, **kwargs)
        if self._left is not None and not kwargs.get("stream"):
            self._left -= completion["usage"]["completion_tokens"]
        return completion


class _Totals:
    """Running totals of the replies' prompt tokens, for `GET /metrics`."""

    # Ours, named apart from llama.cpp's C++ server: its `llamacpp:prompt_tokens_total` counts the tokens it evaluated.
    PREFIX = "deckforge_llama_server_"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.prompt = self.cached = 0

    def add(self, prompt: int, cached: int) -> None:
        with self._lock:
            self.prompt += prompt
            self.cached += cached

    def render(self) -> str:
        """The totals in Prometheus' text format."""
        with self._lock:
            counters = [
                (
                    "prompt_tokens_total",
                    "Prompt tokens of the replies made (usage.prompt_tokens; a stream's last completion's prompt).",
                    self.prompt,
                ),
                (
                    "prompt_tokens_cached_total",
                    "Of those, the tokens reused rather than evaluated (usage.prompt_tokens_details.cached_tokens).",
                    self.cached,
                ),
            ]
        return "".join(
            f"# HELP {self.PREFIX}{name} {text}\n# TYPE {self.PREFIX}{name} counter\n{self.PREFIX}{name} {value}\n"
            for name, text, value in counters
        )


TOTALS = _Totals()


class _CountingLlama(llama_cpp.llama.Llama):
    """A Llama that adds to each reply's usage how many of its prompt tokens it reused rather than evaluated."""

    _evaluated: int | None = None  # prompt tokens evaluated for the reply under way; None: no reply is
    _prompt_next = False  # generate() evaluates its prompt, less the prefix it reuses, in its first eval()
    _prompt_length = 0  # of the reply's last completion: a stream's prompt tokens (it has no usage)

    def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
        self._prompt_next, self._prompt_length = True, len(tokens)
        return super().generate(tokens, *args, **kwargs)

    def eval(self, tokens: Any) -> None:
        if self._prompt_next and self._evaluated is not None:
            self._evaluated += len(tokens)
        self._prompt_next = False
        super().eval(tokens)

    def create_completion(self, *args: Any, **kwargs: Any) -> Any:
        return self._reply(super().create_completion, *args, **kwargs)

    def create_chat_completion(self, *args: Any, **kwargs: Any) -> Any:
        return self._reply(super().create_chat_completion, *args, **kwargs)

    def _reply(self, make: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # A reply may take several completions: chatml-function-calling first asks the model whether to
        # call a tool, then for the message or for each call's arguments (and after each call, whether
        # another follows). Its usage counts the prompts of some of them only: the message's, or the sum
        # of the calls' arguments'. Whichever it counts, cached_tokens is that less the prompt tokens
        # evaluated for the reply in all its completions, so that prompt_tokens - cached_tokens is the
        # prompt work the reply cost: a message's prompt, evaluated just before to ask whether to call a
        # tool, does not count as cached. With one completion, cached_tokens is the prefix it reused.
        if self._evaluated is not None:  # a completion made for the reply under way
            return make(*args, **kwargs)
        if kwargs.get("stream"):
            return self._stream(make, *args, **kwargs)
        self._evaluated = 0
        try:
            reply = make(*args, **kwargs)
        finally:
            evaluated, self._evaluated = self._evaluated, None
        usage = reply["usage"]
        cached = max(0, usage["prompt_tokens"] - evaluated)
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        TOTALS.add(usage["prompt_tokens"], cached)
        return reply

    def _stream(self, make: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        """A streamed reply, counted into the totals once read to its end (llama-cpp-python sends it no usage)."""
        self._evaluated = 0
        try:
            yield from make(*args, **kwargs)
            TOTALS.add(self._prompt_length, max(0, self._prompt_length - self._evaluated))
        finally:
            self._evaluated = None


def _metrics() -> PlainTextResponse:
    return PlainTextResponse(TOTALS.render(), media_type="text/plain; version=0.0.4")


def bounded_chatml_function_calling(llama: Any, max_tokens: int | None = None, **kwargs: Any) -> Any:
    return llama_chat_format.chatml_function_calling(_Budget(llama, max_tokens), max_tokens=max_tokens, **kwargs)


def install() -> None:
    """Add the bounded chat format, autoescape off, the weighed cache, cached_tokens and /metrics to
    llama-cpp-python, before its server builds its app; idempotent."""
    # Each is a patch of llama-cpp-python, made on purpose: a type checker rightly refuses to assign its names.
    llama_chat_format.jinja2 = _Jinja()  # type: ignore[assignment]  # an object standing for the module
    llama_cpp.LlamaRAMCache = _WeighedRAMCache  # type: ignore[misc]  # the server builds its cache from this name when it starts
    llama_cpp.Llama = _CountingLlama  # type: ignore[misc]  # and its model
    # The app answers through the usage's TypedDict, which drops the keys it does not declare.
    llama_types.CompletionUsage.__pydantic_config__ = {"extra": "allow"}  # type: ignore[attr-defined]  # pydantic reads it
    if not any(getattr(route, "path", None) == "/metrics" for route in server_app.router.routes):
        server_app.router.add_api_route(  # the app includes this router's routes when it is built
            "/metrics", _metrics, methods=["GET"], dependencies=[Depends(server_app.authenticate)], include_in_schema=False
        )
    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        BOUNDED, bounded_chatml_function_calling, overwrite=True
    )


def main() -> None:
    install()
    serve()


if __name__ == "__main__":
    main()
