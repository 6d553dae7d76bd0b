"""A protocol-faithful fake OpenAI server for tests: real HTTP on loopback.

It serves `/v1/chat/completions` (plain and streamed) and `/v1/models` in the
real wire format, answers from a scripted policy (a function of the request
body), and can add latency and inject faults: 500, 429 with Retry-After, hangs,
malformed tool-call JSON and truncated bodies, either at a seeded rate or in a
scripted order.

`strict="openai"` or `strict="vllm-glm"` makes it refuse what that provider
refuses, with its status, error shape and wording (fakes/provider_rules.py),
and `queue_limit` answers 503 as vLLM's `--max-num-queued-reqs` does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from aiohttp import web

from fakes import provider_rules

FAULT_KINDS = ("500", "429", "hang", "malformed_tool_json", "truncated")


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[tuple[str, dict | str]] = field(default_factory=list)
    reasoning: Optional[str] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    cached_tokens: Optional[int] = None  # prompt tokens served from the prompt cache (usage.prompt_tokens_details)
    report_usage: bool = True  # some servers send no usage block
    finish_reason: Optional[str] = None  # None: "tool_calls" when there are calls, else "stop"; "length": cut at max_tokens
    delay_s: float = 0.0  # this reply takes that long (a slow turn), on top of the server's latency


@dataclass
class ErrorReply:
    """An HTTP error the policy chooses to answer with (e.g. 400 for a too-long prompt)."""

    status: int
    message: str = "error"


Policy = Callable[[dict[str, Any]], "Reply | ErrorReply"]


def replay(replies: Iterable[Reply]) -> Policy:
    """A policy answering each request with the next reply in order (the last one repeats)."""
    items = list(replies)
    counter = itertools.count()

    def policy(_: dict[str, Any]) -> Reply:
        return items[min(next(counter), len(items) - 1)]

    return policy


@dataclass
class FaultPlan:
    """Faults to inject: `script` first (one entry per request, None = no fault), then `rate` of `kinds`."""

    rate: float = 0.0
    kinds: Sequence[str] = FAULT_KINDS
    seed: int = 0
    script: Sequence[Optional[str]] = ()
    retry_after_s: float = 0.05
    hang_s: float = 30.0

    def __post_init__(self) -> None:
        unknown = {k for k in [*self.kinds, *self.script] if k is not None} - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; known: {FAULT_KINDS}")
        self._rng = random.Random(self.seed)
        self._script = list(self.script)

    def draw(self) -> Optional[str]:
        if self._script:
            return self._script.pop(0)
        if self.rate and self._rng.random() < self.rate:
            return self._rng.choice(list(self.kinds))
        return None


IMAGE_TOKENS = 1000  # what a VLM server charges per image, roughly; not the base64 length


def _tokens(chars: int) -> int:
    """~4 characters per token."""
    return max(1, chars // 4)


def _prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """~4 characters of text per token, IMAGE_TOKENS per image part (its base64 is not read)."""
    chars = images = 0
    stack: list[Any] = [messages]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            chars += len(node)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("type") == "image_url":
                images += 1
            else:
                stack.extend(node.values())
    return _tokens(chars) + IMAGE_TOKENS * images


class FakeOpenAIServer:
    """`with FakeOpenAIServer(policy) as srv:` then point a client at `srv.url`."""

    def __init__(
        self,
        policy: Policy,
        latency_s: float = 0.0,
        faults: FaultPlan | None = None,
        model: str = "fake",
        capacity: int | None = None,
        keep_requests: bool = True,
        max_model_len: int | None = None,
        strict: str | None = None,
        queue_limit: int | None = None,
        port: int = 0,
    ):
        """`capacity`: above this many requests in flight, answer 429 (an overloaded endpoint).
        `max_model_len`: the context window /v1/models states for the model, as vLLM does.
        `keep_requests=False`: bodies are not kept in `requests` (a benchmark's thousands of them
        would grow this process's heap, and its collector's work, on the CPUs being measured).
        `strict`: None accepts every request; "openai" or "vllm-glm" refuses what that provider refuses, with its
        status and wording (with "vllm-glm", a prompt over `max_model_len` too). `queue_limit`: with that many
        requests in flight, answer 503 as vLLM's `--max-num-queued-reqs` admission does. Refused requests are
        recorded in `refused` as (status, message) and never reach the policy. `port`: 0 for a free one; a
        stopped server's port to bring it back where its clients know it."""
        provider_rules.check_profile(strict)
        self.strict = strict
        self.queue_limit = queue_limit
        self.refused: list[tuple[int, str]] = []
        self.policy = policy
        self.keep_requests = keep_requests
        self.served = 0
        self.capacity = capacity
        self.in_flight = 0
        self.peak_in_flight = 0
        self.latency_s = latency_s
        self.faults = faults or FaultPlan()
        self.model = model
        self.max_model_len = max_model_len
        self.requests: list[dict[str, Any]] = []
        self.faults_served: list[str] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="fake-openai")
        self._runner: web.AppRunner | None = None
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *_: Any) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        await self._runner.cleanup()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:  # handlers still sleeping in an injected hang
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _models(self, _: web.Request) -> web.Response:
        card = {"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}
        if self.max_model_len is not None:
            card["max_model_len"] = self.max_model_len
        return web.json_response({"object": "list", "data": [card]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        content_refusal = self._content_refusal(body)
        with self._lock:
            self.served += 1
            if self.keep_requests:
                self.requests.append(body)
            # vLLM admits a request (its queue limit) before it renders the prompt (where the content checks run)
            full = self.queue_limit is not None and self.in_flight >= self.queue_limit
            refusal = provider_rules.queue_full() if full else content_refusal
            if refusal is not None:  # answered at once: never in flight, no fault drawn, never reaches the policy
                self.refused.append((refusal.status, refusal.message))
            else:
                fault = self.faults.draw()
                if fault is None and self.capacity is not None and self.in_flight >= self.capacity:
                    fault = "429"
                if fault:
                    self.faults_served.append(fault)
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        if refusal is not None:
            return web.json_response(refusal.body, status=refusal.status)
        try:
            return await self._answer(request, body, fault)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _content_refusal(self, body: dict[str, Any]) -> provider_rules.Refusal | None:
        if self.strict is None:
            return None
        return provider_rules.refusal(
            self.strict, body, max_model_len=self.max_model_len, prompt_tokens=_prompt_tokens, image_tokens=IMAGE_TOKENS
        )

    async def _answer(self, request: web.Request, body: dict[str, Any], fault: str | None) -> web.StreamResponse:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if fault == "500":
            return web.json_response({"error": {"message": "injected server error", "type": "server_error"}}, status=500)
        if fault == "429":
            headers = {"Retry-After": f"{self.faults.retry_after_s:g}"}
            return web.json_response(
                {"error": {"message": "injected rate limit", "type": "rate_limit"}}, status=429, headers=headers
            )
        if fault == "hang":
            await asyncio.sleep(self.faults.hang_s)
        reply = self.policy(body)
        if isinstance(reply, Reply) and reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if isinstance(reply, ErrorReply):
            return web.json_response({"error": {"message": reply.message, "type": "invalid_request_error"}}, status=reply.status)
        payload = self._completion(body, reply, malformed=fault == "malformed_tool_json")
        if body.get("stream"):
            return await self._stream(request, payload)
        if fault == "truncated":
            return await self._truncated(request, payload)
        return web.json_response(payload)

    def _completion(self, body: dict[str, Any], reply: Reply, malformed: bool) -> dict[str, Any]:
        calls = [
            {
                "id": f"call_{len(body.get('messages', []))}_{i}",  # unique in its conversation, the same for the same request
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
        if malformed:
            calls = calls or [{"id": "call_bad", "type": "function", "function": {"name": "write_file", "arguments": ""}}]
            for c in calls:
                c["function"]["arguments"] = c["function"]["arguments"][: max(1, len(c["function"]["arguments"]) // 2)] or "{"
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if calls:
            message["tool_calls"] = calls
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _prompt_tokens(body.get("messages", []))
        completion = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else _tokens(len(reply.content + (reply.reasoning or "") + json.dumps(calls)))
        )
        payload = {
            "id": f"chatcmpl-{self.served}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
                    "logprobs": None,
                }
            ],
        }
        if reply.report_usage:
            payload["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            if reply.cached_tokens is not None:
                payload["usage"]["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        return payload

    async def _truncated(self, request: web.Request, payload: dict[str, Any]) -> web.StreamResponse:
        data = json.dumps(payload).encode()
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.content_length = len(data)
        await response.prepare(request)
        await response.write(data[: len(data) // 2])
        request.transport.close()  # the body ends early, as when a proxy drops the connection
        return response

    async def _stream(self, request: web.Request, payload: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        choice = payload["choices"][0]
        delta = dict(choice["message"])
        if "tool_calls" in delta:
            delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
        chunks = [
            {"index": 0, "delta": delta, "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]},
        ]
        for chunk in chunks:
            event = {k: payload[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk", "choices": [chunk]}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        if "usage" in payload:
            usage_event = {k: payload[k] for k in ("id", "created", "model")} | {
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": payload["usage"],
            }
            await response.write(f"data: {json.dumps(usage_event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
