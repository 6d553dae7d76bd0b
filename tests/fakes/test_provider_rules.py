"""FakeOpenAIServer(strict=...): each provider refuses what the real one refuses, over real HTTP on loopback."""

from __future__ import annotations

import threading
import time
import typing
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionAssistantMessageParam, ChatCompletionMessageParam

from fakes import provider_rules
from fakes.openai_server import IMAGE_TOKENS, FakeOpenAIServer, Reply

PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}},
        },
    }
]


def conversation(reasoning: bool = False) -> list[dict[str, Any]]:
    """system, user, assistant with a tool call, the tool's reply, a user message with the rendered slide."""
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_2_0",
                "type": "function",
                "function": {"name": "write_file", "arguments": '{"path": "a.html", "text": "<h1>"}'},
            }
        ],
    }
    if reasoning:
        assistant["reasoning_content"] = "The title slide comes first."
    return [
        {"role": "system", "content": "You make slides."},
        {"role": "user", "content": "A deck about owls."},
        assistant,
        {"role": "tool", "tool_call_id": "call_2_0", "content": "wrote a.html"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "The rendered slide:"}, {"type": "image_url", "image_url": {"url": PNG}}],
        },
    ]


def request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """What core.llm.client sends: model, messages, temperature, top_p, max_tokens, tools (and tool_choice at times)."""
    return {"model": "fake", "messages": messages, "temperature": 0.6, "top_p": 0.95, "max_tokens": 256, "tools": TOOLS} | extra


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, _: dict[str, Any]) -> Reply:
        self.calls += 1
        return Reply("ok")


@pytest.fixture(scope="module")
def openai_srv():
    with FakeOpenAIServer(Counting(), strict="openai") as srv:
        yield srv


@pytest.fixture(scope="module")
def vllm_srv():
    with FakeOpenAIServer(Counting(), strict="vllm-glm", max_model_len=4096) as srv:
        yield srv


def post(srv: FakeOpenAIServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{srv.url}/chat/completions", json=body, timeout=5)


def refused(srv: FakeOpenAIServer, body: dict[str, Any], status: int = 400) -> dict[str, Any]:
    """Post `body`, check it is refused with `status` without reaching the policy; the error object."""
    calls = srv.policy.calls
    response = post(srv, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert srv.refused[-1] == (status, error["message"])
    assert srv.policy.calls == calls
    return error


def test_an_unknown_profile_is_a_value_error():
    with pytest.raises(ValueError, match="unknown strict profile 'anthropic'"):
        FakeOpenAIServer(Counting(), strict="anthropic")


# -- the valid conversation ---------------------------------------------------------------------------------


def test_a_valid_conversation_is_accepted_by_openai(openai_srv):
    calls = openai_srv.policy.calls
    response = post(openai_srv, request(conversation(), tool_choice="auto"))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "ok"
    assert openai_srv.policy.calls == calls + 1


def test_a_valid_conversation_with_reasoning_and_template_kwargs_is_accepted_by_vllm_glm(vllm_srv):
    body = request(conversation(reasoning=True), chat_template_kwargs={"enable_thinking": False}, top_k=20)
    response = post(vllm_srv, body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "ok"


def test_without_strict_everything_is_accepted_as_before():
    messages = conversation(reasoning=True)
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"path": '
    messages[3]["content"] = [{"type": "image_url", "image_url": {"url": PNG}}]
    with FakeOpenAIServer(Counting(), max_model_len=10) as srv:
        response = post(srv, request(messages, chat_template_kwargs={}, max_tokens=100))
        assert response.status_code == 200
        assert srv.refused == []


# -- openai -------------------------------------------------------------------------------------------------


def test_openai_refuses_reasoning_content_on_an_assistant_message(openai_srv):
    error = refused(openai_srv, request(conversation(reasoning=True)))
    assert error == {
        "message": "Additional properties are not allowed ('reasoning_content' was unexpected) - 'messages.2'",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


def test_openai_refuses_an_unknown_request_argument(openai_srv):
    error = refused(openai_srv, request(conversation(), chat_template_kwargs={"enable_thinking": False}))
    assert error["message"] == "Unrecognized request argument supplied: chat_template_kwargs"
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", None, None)
    two = refused(openai_srv, request(conversation(), top_k=20, repetition_penalty=1.05))
    assert two["message"] == "Unrecognized request arguments supplied: repetition_penalty, top_k"


def test_openai_refuses_a_request_without_model_or_messages(openai_srv):
    body = request(conversation())
    del body["model"]
    assert refused(openai_srv, body)["message"] == "you must provide a model parameter"
    body = request(conversation())
    del body["messages"]
    error = refused(openai_srv, body)
    assert (error["message"], error["param"], error["code"]) == (
        "Missing required parameter: 'messages'.",
        "messages",
        "missing_required_parameter",
    )


def test_the_openai_sdk_reads_the_refusal(openai_srv):
    client = openai.OpenAI(base_url=openai_srv.url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="fake", messages=conversation(), extra_body={"chat_template_kwargs": {}})
    assert caught.value.status_code == 400
    assert caught.value.body["message"] == "Unrecognized request argument supplied: chat_template_kwargs"


def test_openai_refuses_an_unknown_role(openai_srv):
    messages = conversation()
    messages[1]["role"] = "observation"
    error = refused(openai_srv, request(messages))
    roles = "['developer', 'system', 'user', 'assistant', 'tool', 'function']"
    assert error["message"] == f"'observation' is not one of {roles} - 'messages.1.role'"


@pytest.mark.parametrize("role, index", [("tool", 3), ("system", 0), ("assistant", 2)])
def test_openai_refuses_an_image_outside_a_user_message(openai_srv, role, index):
    messages = conversation()
    messages[index]["content"] = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": PNG}}]
    error = refused(openai_srv, request(messages))
    assert error["message"] == (
        f"Invalid 'messages[{index}]'. Image URLs are only allowed for messages with role 'user', "
        f"but this message with role '{role}' contains an image URL."
    )
    assert (error["param"], error["code"]) == (f"messages[{index}]", "invalid_value")


def test_openai_refuses_other_part_types_the_sdk_does_not_allow_for_the_role(openai_srv):
    messages = conversation()
    messages[3]["content"] = [{"type": "file", "file": {"file_id": "file-1"}}]
    error = refused(openai_srv, request(messages))
    assert error["message"] == "Invalid value: 'file'. Supported values are: 'text'."
    assert error["param"] == "messages[3].content[0].type"


def test_openai_refuses_a_tool_message_that_answers_no_call(openai_srv):
    messages = conversation()
    messages[3]["tool_call_id"] = "call_elsewhere"
    error = refused(openai_srv, request(messages))
    assert (
        error["message"]
        == "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
    )
    assert (error["param"], error["code"]) == ("messages.[3].role", None)
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_1", "content": "x"}]
    assert refused(openai_srv, request(orphan))["param"] == "messages.[1].role"


def test_openai_refuses_tool_calls_without_a_reply_for_each(openai_srv):
    messages = conversation()
    messages[2]["tool_calls"].append(
        {"id": "call_2_1", "type": "function", "function": {"name": "write_file", "arguments": "{}"}}
    )
    error = refused(openai_srv, request(messages))
    assert error["message"] == (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
        "The following tool_call_ids did not have response messages: call_2_1"
    )
    assert error["param"] == "messages.[4].role"
    del messages[3]
    assert refused(openai_srv, request(messages))["message"].endswith(": call_2_0, call_2_1")


def test_openai_refuses_a_missing_required_key_and_unknown_keys_inside_a_tool_call(openai_srv):
    messages = conversation()
    del messages[3]["tool_call_id"]
    error = refused(openai_srv, request(messages))
    assert error["message"] == "Missing required parameter: 'messages[3].tool_call_id'."
    assert (error["param"], error["code"]) == ("messages[3].tool_call_id", "missing_required_parameter")
    messages = conversation()
    messages[2]["tool_calls"][0]["index"] = 0  # a streamed delta's field, sent back
    error = refused(openai_srv, request(messages))
    assert error["message"] == "Additional properties are not allowed ('index' was unexpected) - 'messages.2.tool_calls.0'"


def test_openai_message_keys_are_the_sdks(openai_srv):
    """The allowed keys per role are the SDK's TypedDict fields: what the assistant param declares is accepted."""
    types = provider_rules._message_types()
    assert list(types) == [typing.get_type_hints(t)["role"].__args__[0] for t in typing.get_args(ChatCompletionMessageParam)]
    for td in types.values():
        assert set(provider_rules._schema(td).fields) == set(td.__annotations__)
    assert set(provider_rules._schema(types["assistant"]).fields) == set(ChatCompletionAssistantMessageParam.__annotations__)
    messages = conversation()
    messages[2] |= {"name": "presenter", "refusal": None, "audio": {"id": "audio_1"}}
    response = post(openai_srv, request(messages))
    assert response.status_code == 200, response.text


# -- vllm-glm -----------------------------------------------------------------------------------------------


def test_vllm_refuses_tool_call_arguments_that_do_not_parse(vllm_srv):
    messages = conversation(reasoning=True)
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"path": "a.html", "text": "<h1>'  # cut at max_tokens
    error = refused(vllm_srv, request(messages))
    assert error == {
        "message": "Unterminated string starting at: line 1 column 28 (char 27)",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }


def test_vllm_refuses_tool_call_arguments_that_are_not_an_object(vllm_srv):
    messages = conversation()
    messages[2]["tool_calls"][0]["function"]["arguments"] = '["a.html"]'
    assert refused(vllm_srv, request(messages))["message"] == "'list object' has no attribute 'items'"
    messages[2]["tool_calls"][0]["function"]["arguments"] = ""  # empty: vLLM passes {} to the template
    assert post(vllm_srv, request(messages)).status_code == 200


def test_vllm_refuses_an_image_in_a_tool_message(vllm_srv):
    messages = conversation()
    messages[3]["content"] = [{"type": "text", "text": "rendered"}, {"type": "image_url", "image_url": {"url": PNG}}]
    error = refused(vllm_srv, request(messages))
    assert error["message"] == provider_rules.TOOL_IMAGE_VLLM
    assert (error["type"], error["code"]) == ("BadRequestError", 400)


def test_vllm_refuses_a_text_prompt_over_the_context_with_its_wording(vllm_srv):
    messages = conversation(reasoning=True)[:2]
    messages[1]["content"] = "owl " * 4000  # ~4000 tokens
    error = refused(vllm_srv, request(messages, max_tokens=512))
    assert error["message"] == (
        "This model's maximum context length is 4096 tokens. However, you requested 512 output tokens and your prompt "
        "contains at least 3585 input tokens, for a total of at least 4097 tokens. Please reduce the length of the input "
        "prompt or the number of requested output tokens. (parameter=input_tokens, value=3585)"
    )
    assert error["param"] == "input_tokens"
    error = refused(vllm_srv, request(messages, max_tokens=5000))
    assert error["message"].startswith("max_tokens=5000 cannot be greater than max_model_len=max_total_tokens=4096.")


def test_vllm_refuses_an_image_prompt_over_the_context_with_its_multimodal_wording(vllm_srv):
    messages = conversation(reasoning=True)
    images = [{"type": "image_url", "image_url": {"url": PNG}}] * 4
    messages[4]["content"] = messages[4]["content"] + images  # 5 images: 5000 tokens
    error = refused(vllm_srv, request(messages, max_tokens=256))
    assert error["message"].startswith("The decoder prompt (length 50")
    assert error["message"].endswith(
        "is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number "
        "of text tokens plus multimodal tokens. For image inputs, the number of image tokens depends on the number of "
        "images, and possibly their aspect ratios as well."
    )
    # 3 images (~3000 tokens) fit; with max_tokens 2000 the prompt plus output does not, and vLLM still accepts it
    # (the text the renderer counts is short; generation stops at the model length)
    messages[4]["content"] = messages[4]["content"][:4]
    assert 3 * IMAGE_TOKENS < 4096 < 3 * IMAGE_TOKENS + 2000
    assert post(vllm_srv, request(messages, max_tokens=2000)).status_code == 200


# -- the queue limit ----------------------------------------------------------------------------------------


def test_a_full_queue_answers_503_with_vllms_wording():
    """Two requests held in flight (0.3 s each), a third refused at once, a fourth accepted once they are done."""
    with (
        FakeOpenAIServer(lambda _: Reply("slow", delay_s=0.3), queue_limit=2, capacity=5) as srv,
        httpx.Client(timeout=5) as client,
    ):
        url, body = f"{srv.url}/chat/completions", request(conversation())
        threads = [threading.Thread(target=client.post, args=(url,), kwargs={"json": body}) for _ in range(2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 2
        while srv.in_flight < 2 and time.monotonic() < deadline:
            time.sleep(0.002)
        response = client.post(url, json=body)
        assert response.status_code == 503
        assert response.json() == {
            "error": {"message": provider_rules.QUEUE_FULL, "type": "Service Unavailable", "param": None, "code": 503}
        }
        for t in threads:
            t.join()
        assert srv.refused == [(503, provider_rules.QUEUE_FULL)]
        assert srv.faults_served == [] and srv.peak_in_flight == 2
        assert client.post(url, json=body).status_code == 200
