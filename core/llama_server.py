"""`python -m core.llama_server ARGS`: llama-cpp-python's OpenAI-compatible server, with one more chat format.

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
`install()` makes these changes to llama-cpp-python, in the server process (core.local_server starts
it as `python -m core.llama_server`); importing this module changes nothing.
"""

from __future__ import annotations

from typing import Any

import jinja2
import llama_cpp
from llama_cpp import llama_chat_format
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


def bounded_chatml_function_calling(llama: Any, max_tokens: int | None = None, **kwargs: Any) -> Any:
    return llama_chat_format.chatml_function_calling(_Budget(llama, max_tokens), max_tokens=max_tokens, **kwargs)


def install() -> None:
    """Add the bounded chat format, autoescape off and the weighed cache to llama-cpp-python; idempotent."""
    llama_chat_format.jinja2 = _Jinja()
    llama_cpp.LlamaRAMCache = _WeighedRAMCache  # the server builds its cache from this name when it starts
    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        BOUNDED, bounded_chatml_function_calling, overwrite=True
    )


def main() -> None:
    install()
    serve()


if __name__ == "__main__":
    main()
