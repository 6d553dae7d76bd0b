"""The model client against the fake OpenAI server: retries, give-ups, usage and cost, wire format."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
from pathlib import Path

import numpy as np
import openai
import pytest
from aiohttp import web
from PIL import Image

from core.config import LLMConfig, PriceConfig
from core.llm.client import EndpointError, ModelClient, retry_after_s
from core.llm.conversation import profile_named
from core.llm.results import ModelError
from core.llm.wire import DataURLs, to_wire
from core.records import Message, ToolCall
from core.run.usage import UsageMeter
from fakes.openai_server import ErrorReply, FakeOpenAIServer, FaultPlan, Reply, replay

pytestmark = pytest.mark.usefixtures("close_model_clients")  # tests/conftest.py

HELLO = [Message("user", "hello")]


def client(srv: FakeOpenAIServer, **overrides) -> ModelClient:
    settings = {"backoff_base_s": 0.01, "timeout_s": 2.0, "max_retries": 3} | overrides
    return ModelClient(LLMConfig(base_url=srv.url, model="fake", api_key_env="FAKE_KEY", **settings), "agent")


def answer(_: dict) -> Reply:
    return Reply("done", [("read_file", {"path": "notes.md"})], reasoning="I should read the notes.")


@pytest.mark.parametrize("fault", ["500", "429", "hang", "truncated"])
async def test_transient_fault_is_retried(fault: str) -> None:
    with FakeOpenAIServer(answer, faults=FaultPlan(script=[fault], hang_s=5), strict="vllm-glm") as srv:
        c = client(srv, timeout_s=0.5)
        result = await c.chat(HELLO)
        assert result.content == "done" and result.tool_calls[0].name == "read_file"
        assert result.reasoning == "I should read the notes."
        assert len(srv.requests) == 2 and srv.faults_served == [fault]
        assert c.meter.snapshot()["agent"].retries == 1


async def test_rate_limit_honours_retry_after() -> None:
    with FakeOpenAIServer(answer, faults=FaultPlan(script=["429"], retry_after_s=0.4), strict="vllm-glm") as srv:
        c = client(srv, backoff_base_s=0.001)
        started = time.perf_counter()
        await c.chat(HELLO)
        assert time.perf_counter() - started >= 0.4


@pytest.mark.parametrize(
    ("header", "seconds"), [("2", 2.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("soon", None), (None, None)]
)
def test_retry_after_is_seconds_or_an_http_date_else_none(header: str | None, seconds: float | None) -> None:
    assert retry_after_s(EndpointError(429, "slow down", header)) == seconds  # a malformed header raised ValueError


async def test_malformed_tool_call_json_reaches_the_caller_verbatim() -> None:
    with FakeOpenAIServer(answer, faults=FaultPlan(script=["malformed_tool_json"]), strict="vllm-glm") as srv:
        result = await client(srv).chat(HELLO)
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.tool_calls[0].arguments)  # the agent loop turns this into an observation


async def test_gives_up_after_the_cap_and_says_why() -> None:
    with FakeOpenAIServer(answer, faults=FaultPlan(script=["500"] * 10), strict="vllm-glm") as srv:
        c = client(srv, max_retries=2)
        with pytest.raises(ModelError) as err:
            await c.chat(HELLO)
        assert err.value.kind == "server" and err.value.attempts == 3 and len(srv.requests) == 3
        assert c.meter.snapshot()["agent"].failures == {"server": 1}


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (400, "bad tool schema", "bad_request"),
        (401, "no key", "auth"),
        (400, "This model's maximum context length is 65536 tokens", "context_length"),
    ],
)
async def test_client_errors_are_not_retried(status: int, message: str, kind: str) -> None:
    with FakeOpenAIServer(lambda _: ErrorReply(status, message)) as srv:  # permissive: the test answers with the refusal itself
        with pytest.raises(ModelError) as err:
            await client(srv).chat(HELLO)
        assert err.value.kind == kind and len(srv.requests) == 1


async def test_usage_and_cost_are_counted_per_role() -> None:
    meter = UsageMeter()
    with FakeOpenAIServer(lambda _: Reply("ok", prompt_tokens=1000, completion_tokens=500), strict="vllm-glm") as srv:
        price = PriceConfig(input_per_mtok=1.0, output_per_mtok=2.0)
        agent = ModelClient(LLMConfig(base_url=srv.url, model="fake", price=price), "agent", meter)
        critic = ModelClient(LLMConfig(base_url=srv.url, model="fake"), "critic", meter)
        await asyncio.gather(agent.chat(HELLO), agent.chat(HELLO), critic.chat(HELLO))
    snap = meter.snapshot()
    assert (snap["agent"].calls, snap["agent"].prompt_tokens, snap["agent"].completion_tokens) == (2, 2000, 1000)
    assert snap["agent"].cost == pytest.approx(0.004)
    assert snap["critic"].cost == 0.0 and snap["critic"].calls == 1  # a loopback endpoint costs nothing by default
    assert meter.totals().prompt_tokens == 3000


async def test_missing_usage_is_estimated_and_flagged() -> None:
    with FakeOpenAIServer(lambda _: Reply("x" * 400, report_usage=False), strict="vllm-glm") as srv:
        c = client(srv)
        result = await c.chat([Message("user", "y" * 4000)])
    assert not result.usage_reported and result.usage.prompt_tokens == 1000 and result.usage.completion_tokens == 100
    assert c.meter.snapshot()["agent"].estimated_calls == 1


def _conversation(tmp_path: Path) -> list[Message]:
    Image.new("RGB", (8, 8), "red").save(tmp_path / "slide.png")
    return [
        Message("system", "sys"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "inspect_slide", "{}"), ToolCall("c2", "read_file", "{}"))),
        Message("tool", "1 defect", images=("slide.png",), tool_call_id="c1", name="inspect_slide"),
        Message("tool", "text", tool_call_id="c2", name="read_file"),
    ]


@pytest.mark.parametrize("profile", ["openai", "vllm-glm"])
async def test_images_after_tool_results(tmp_path: Path, profile: str) -> None:
    with FakeOpenAIServer(answer, strict=profile) as srv:
        await client(srv, profile=profile).chat(_conversation(tmp_path), tools=[], image_root=tmp_path)
        wire = srv.requests[0]["messages"]
    assert [m["role"] for m in wire] == ["system", "assistant", "tool", "tool", "user"]  # images in a user message after them
    assert isinstance(wire[2]["content"], str)
    assert wire[4]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert wire[1]["tool_calls"][0]["function"]["name"] == "inspect_slide"


async def test_a_text_only_model_gets_no_image_only_a_note(tmp_path: Path) -> None:
    with FakeOpenAIServer(answer, strict="vllm-glm") as srv:
        await client(srv, vision=False).chat(_conversation(tmp_path), tools=[], image_root=tmp_path)
        wire = srv.requests[0]["messages"]
    assert [m["role"] for m in wire] == ["system", "assistant", "tool", "tool"]  # nothing moved to a user message
    assert wire[2]["content"] == "1 defect\n[1 image(s) not shown: this model reads no images]"
    assert "image_url" not in json.dumps(wire)


@pytest.mark.parametrize(
    ("llama_context_error", "kind"), [("Requested tokens (9000) exceed context window of 8192", "context_length")]
)
async def test_llama_cpp_context_refusal_is_a_context_length_error(llama_context_error: str, kind: str) -> None:
    with FakeOpenAIServer(lambda _: ErrorReply(400, llama_context_error)) as srv:  # permissive: the test answers the refusal
        with pytest.raises(ModelError) as err:
            await client(srv).chat(HELLO)
    assert err.value.kind == kind


async def test_a_reply_that_used_its_whole_token_budget_was_cut() -> None:
    """Some servers (llama-cpp-python's tool calling) stop at max_tokens but call it something else."""
    with FakeOpenAIServer(
        lambda _: Reply(tool_calls=[("write_file", '{"path": "a.ht')], completion_tokens=32), strict="vllm-glm"
    ) as srv:
        assert (await client(srv, max_tokens=32).chat(HELLO)).finish_reason == "length"
        assert (await client(srv, max_tokens=33).chat(HELLO)).finish_reason == "tool_calls"


async def test_a_turn_over_its_time_limit_fails_as_turn_timeout_without_retries() -> None:
    with FakeOpenAIServer(lambda _: Reply("late", delay_s=1.0), strict="vllm-glm") as srv:
        c = client(srv, turn_timeout_s=0.2, max_retries=3)
        with pytest.raises(ModelError) as err:
            await c.chat(HELLO)
    assert err.value.kind == "turn_timeout" and "llm.turn_timeout_s=0.2" in str(err.value) and len(srv.requests) == 1
    assert c.meter.snapshot()["agent"].failures == {"turn_timeout": 1}


async def test_concurrency_limit_per_role() -> None:
    with FakeOpenAIServer(answer, latency_s=0.2, strict="vllm-glm") as srv:
        c = client(srv, max_concurrency=2)
        started = time.perf_counter()
        await asyncio.gather(*(c.chat(HELLO) for _ in range(6)))
        assert time.perf_counter() - started >= 0.6  # 3 waves of 2


async def test_fake_server_speaks_the_streaming_protocol() -> None:
    # permissive: the openai SDK itself talks to the fake here, not a product client with a profile
    with FakeOpenAIServer(replay([Reply("streamed", [("thinking", {"thought": "t"})])])) as srv:
        api = openai.AsyncOpenAI(base_url=srv.url, api_key="x")
        stream = await api.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}], stream=True)
        chunks = [c async for c in stream]
        models = await api.models.list()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed"
    assert chunks[-1].usage.total_tokens > 0
    assert [m.id for m in models.data] == ["fake"]


async def test_sampling_and_extra_body_reach_the_server() -> None:
    with FakeOpenAIServer(answer, strict="vllm-glm") as srv:
        extra = {"chat_template_kwargs": {"enable_thinking": False}}
        await client(srv, temperature=0.2, max_tokens=77, extra_body=extra).chat(
            HELLO, tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}]
        )
        body = srv.requests[0]
    assert (body["temperature"], body["max_tokens"], body["model"]) == (0.2, 77, "fake")
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and body["tools"][0]["function"]["name"] == "f"


async def test_an_image_gone_from_disk_becomes_a_note(tmp_path: Path) -> None:
    with FakeOpenAIServer(answer, strict="vllm-glm") as srv:
        await client(srv).chat([Message("user", "look", images=("gone.png",))], image_root=tmp_path)
        (message,) = srv.requests[0]["messages"]
    assert message["content"][1] == {"type": "text", "text": "[image gone.png no longer exists]"}


def test_images_are_encoded_once_until_they_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    urls, reads = DataURLs(), []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or read_bytes(self))
    slide = tmp_path / "slide_01.png"
    Image.new("RGB", (16, 9), "white").save(slide)
    first = urls(slide)
    assert urls(slide) == first and reads == ["slide_01.png"]
    Image.new("RGB", (16, 9), "black").save(slide.with_name("new.png"))
    slide.with_name("new.png").replace(slide)  # the agent redraws the slide
    assert urls(slide) != first and base64.b64decode(urls(slide).split(",", 1)[1]) == slide.read_bytes()
    assert reads == ["slide_01.png", "slide_01.png", "slide_01.png"]  # the last read is the test's own


@pytest.mark.parametrize(("profile", "sent"), [("vllm-glm", "webp"), ("openai", "webp"), ("llama.cpp", "png")])
def test_an_image_goes_as_stored_where_the_server_reads_it_else_as_png(tmp_path: Path, profile: str, sent: str) -> None:
    """llama.cpp decodes no WebP (stb_image): it gets the same pixels as PNG; the others get the stored bytes."""
    render = tmp_path / "slide_01.1.webp"
    Image.effect_noise((32, 24), 40).convert("RGB").save(render, "WEBP", lossless=True)
    (message,) = to_wire([Message("user", "look", images=(render.name,))], tmp_path, profile_named(profile))
    url = message["content"][1]["image_url"]["url"]
    header, data = url.split(",", 1)
    assert header == f"data:image/{sent};base64"
    decoded = Image.open(io.BytesIO(base64.b64decode(data)))
    assert decoded.format == sent.upper()
    assert np.array_equal(np.asarray(decoded.convert("RGB")), np.asarray(Image.open(render).convert("RGB")))
    if sent == "webp":
        assert base64.b64decode(data) == render.read_bytes()


def test_kept_images_stay_within_their_byte_budget(tmp_path: Path) -> None:
    paths = []
    for i in range(6):
        paths.append(tmp_path / f"p{i}.png")
        Image.effect_noise((64, 64), 50).save(paths[-1])
    one = len(DataURLs()(paths[0]))
    urls = DataURLs(max_bytes=int(one * 3.5))
    for path in paths:
        urls(path)
    assert len(urls._urls) == 3 and urls._bytes <= urls.max_bytes
    assert [key[0] for key in urls._urls] == [str(p) for p in paths[3:]]  # least recently used went first


def test_one_client_serves_successive_event_loops_and_closes() -> None:
    """A client made once (e.g. by a CLI) may be used by several `asyncio.run`s: a session per loop."""
    with FakeOpenAIServer(answer, strict="vllm-glm") as srv:
        c = client(srv)

        async def call_and_close() -> bool:
            results = await asyncio.gather(c.chat(HELLO), c.chat(HELLO))
            session = c.transport.session()
            await c.aclose()  # closes the session of this loop
            return all(r.content == "done" for r in results) and session.closed

        assert asyncio.run(call_and_close()) and asyncio.run(call_and_close())

        async def list_and_close() -> list[str]:
            async with c:
                return await c.list_models()

        assert asyncio.run(list_and_close()) == [srv.model]
        assert len(srv.requests) == 4


async def test_a_non_json_answer_is_a_malformed_response() -> None:
    """A proxy's HTML error page with status 200 is a malformed response (transient), not a crash."""

    async def gateway_page(_: web.Request) -> web.Response:
        return web.Response(text="<html>gateway</html>", content_type="text/html")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", gateway_page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    c = ModelClient(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="fake", max_retries=0), "agent")
    try:
        with pytest.raises(ModelError) as err:
            await c.chat(HELLO)
        assert err.value.kind == "malformed_response"
    finally:
        await c.aclose()
        await runner.cleanup()


async def test_requests_go_through_the_proxy_named_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY is honoured (looked up once per client): the endpoint's host does not resolve, the proxy answers."""
    with FakeOpenAIServer(answer, strict="vllm-glm") as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):  # urllib prefers the lower-case one when both are set
            monkeypatch.setenv(name, proxy.url.removesuffix("/v1"))
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        c = ModelClient(LLMConfig(base_url="http://model.invalid/v1", model="fake", max_retries=0), "agent")
        try:
            assert (await c.chat(HELLO)).content == "done"
        finally:
            await c.aclose()
        assert len(proxy.requests) == 1


async def test_no_proxy_bypasses_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(answer, strict="vllm-glm") as srv:
        for name, value in (("HTTP_PROXY", "http://proxy.invalid:3128"), ("NO_PROXY", "127.0.0.1")):
            monkeypatch.setenv(name, value)
            monkeypatch.setenv(name.lower(), value)
        c = client(srv)
        try:
            assert (await c.chat(HELLO)).content == "done"
        finally:
            await c.aclose()


async def test_fake_server_can_serve_without_keeping_bodies() -> None:
    """The benchmarks' endpoint keeps no request bodies (its heap would grow with every call)."""
    with FakeOpenAIServer(answer, keep_requests=False, strict="vllm-glm") as srv:
        c = client(srv)
        try:
            first, second = [await c.chat(HELLO) for _ in range(2)]
        finally:
            await c.aclose()
        assert srv.requests == [] and srv.served == 2
        assert first.tool_calls[0].id == second.tool_calls[0].id  # a call's id depends on its request alone, not on what was kept
