"""ReplicaSim, the simulated vLLM replica: its prefix cache, queue, KV budget, /metrics and outages, over real HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fakes import provider_rules
from fakes.openai_server import _prompt_tokens
from fakes.replica_sim import ReplicaSim, SimSpec
from fakes.sim_fleet import simulated_fleet

FAST = SimSpec(decode_s_per_token=0.001)  # a request takes about 30 ms
SYSTEM = {"role": "system", "content": "You make slides. " * 50}


def conversation(topic: str) -> list[dict[str, Any]]:
    return [SYSTEM, {"role": "user", "content": f"A deck about {topic}."}]


async def chat(client: httpx.AsyncClient, messages: list[dict[str, Any]]) -> httpx.Response:
    return await client.post("/chat/completions", json={"model": "sim", "messages": messages})


async def gauges(client: httpx.AsyncClient, url: str) -> dict[str, float]:
    """The replica's /metrics (beside /v1, not under it) as {sample name: value}, each series labelled as vLLM's."""
    text = (await client.get(url.removesuffix("/v1") + "/metrics")).text
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert all(s.labels["model_name"] == "sim" for s in samples)
    return {s.name: s.value for s in samples}


async def test_usage_reports_the_cached_prefix_of_a_growing_conversation():
    with ReplicaSim(FAST) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            first = (await chat(client, conversation("tides"))).json()
            second = (await chat(client, conversation("tides"))).json()
            grown = [*conversation("tides"), second["choices"][0]["message"], {"role": "user", "content": "Shorter."}]
            third = (await chat(client, grown)).json()
            other = (await chat(client, conversation("moths"))).json()
    assert first["usage"]["prompt_tokens"] == _prompt_tokens(conversation("tides"))
    assert first["usage"]["completion_tokens"] == FAST.reply_tokens
    assert first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] == _prompt_tokens(conversation("tides"))
    # the reply the client appended is part of the cached prefix
    assert third["usage"]["prompt_tokens"] == _prompt_tokens(grown)
    assert third["usage"]["prompt_tokens_details"]["cached_tokens"] == _prompt_tokens(grown[:3])
    assert other["usage"]["prompt_tokens_details"]["cached_tokens"] == _prompt_tokens([SYSTEM])
    stats = sim.stats()
    assert (stats.served, stats.refused) == (4, 0)
    assert stats.cached_tokens == sum(r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in (second, third, other))


async def test_a_full_queue_refuses_at_once_with_vllms_503():
    spec = SimSpec(batch_slots=1, max_queued=1, decode_s_per_token=0.01, reply_tokens=20, retry_after_s=2.0)  # 0.2 s each
    with ReplicaSim(spec) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            answers = await asyncio.gather(*(chat(client, conversation(str(i))) for i in range(3)))
    assert sorted(a.status_code for a in answers) == [200, 200, 503]
    refused = next(a for a in answers if a.status_code == 503)
    assert refused.json() == provider_rules.queue_full().body
    assert refused.headers["Retry-After"] == "2"
    assert refused.elapsed.total_seconds() < 0.15  # answered before the first request finished
    stats = sim.stats()
    assert (stats.served, stats.refused, stats.peak_in_flight, stats.peak_running) == (2, 1, 2, 1)


async def test_metrics_show_the_load_while_it_runs():
    spec = SimSpec(batch_slots=2, max_queued=None, decode_s_per_token=0.01, reply_tokens=30)  # 0.3 s each
    with ReplicaSim(spec) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            load = asyncio.gather(*(chat(client, conversation(str(i))) for i in range(5)))
            deadline = time.monotonic() + 0.25
            while (busy := await gauges(client, sim.url))["vllm:num_requests_waiting"] < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            answers = await load
            done = await gauges(client, sim.url)
    assert [a.status_code for a in answers] == [200] * 5
    assert busy["vllm:num_requests_running"] == 2
    assert busy["vllm:num_requests_waiting"] == 3
    held = 2 * answers[0].json()["usage"]["total_tokens"]  # all five are the same size; the two running read no cache
    assert busy["vllm:kv_cache_usage_perc"] == pytest.approx(held / spec.kv_tokens)
    assert 0 < busy["vllm:kv_cache_usage_perc"] <= 1
    prompts = sum(a.json()["usage"]["prompt_tokens"] for a in answers)
    cached = sum(a.json()["usage"]["prompt_tokens_details"]["cached_tokens"] for a in answers)
    expected = {
        "vllm:num_requests_running": 0,
        "vllm:num_requests_waiting": 0,
        "vllm:kv_cache_usage_perc": 0,
        "vllm:request_success_total": 5,
        "vllm:prompt_tokens_total": prompts,
        "vllm:prefix_cache_queries_total": prompts,
        "vllm:prefix_cache_hits_total": cached,
        "vllm:generation_tokens_total": 5 * spec.reply_tokens,
    }
    assert {name: done[name] for name in expected} == expected
    assert cached == 3 * _prompt_tokens([SYSTEM])  # the last three started after a reply had cached the system prompt


async def test_a_request_waits_for_kv_room_and_evicts_a_finished_ones_prefixes():
    def alone(topic: str) -> list[dict[str, Any]]:  # no prefix shared with another topic
        return [{"role": "user", "content": f"{topic} " * 200}]

    tokens = _prompt_tokens(alone("tides")) + FAST.reply_tokens
    spec = SimSpec(batch_slots=2, kv_tokens=tokens * 3 // 2)  # 0.3 s each
    with ReplicaSim(spec) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            running = asyncio.create_task(chat(client, alone("tides")))
            while sim.stats().peak_running == 0:
                await asyncio.sleep(0.005)
            second = await chat(client, alone("moths"))
            first = await running
            again = (await chat(client, alone("tides"))).json()
    assert (first.status_code, second.status_code) == (200, 200)
    stats = sim.stats()
    assert (stats.peak_in_flight, stats.peak_running) == (2, 1)  # a slot was free, the KV budget was not
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == 0  # evicted to make room for the second


async def test_a_stopped_replica_refuses_connections_and_comes_back_on_its_port():
    slow = SimSpec(decode_s_per_token=0.05)  # 1.6 s
    with ReplicaSim(slow) as sim:
        url = sim.url
        async with httpx.AsyncClient(base_url=url) as client:
            in_flight = asyncio.create_task(chat(client, conversation("tides")))
            while sim.stats().peak_running == 0:
                await asyncio.sleep(0.01)
            sim.stop()
            with pytest.raises(httpx.TransportError):
                await in_flight  # its connection closed under it
            with pytest.raises(httpx.ConnectError):
                await chat(client, conversation("tides"))
            stats = sim.stats()
            sim.start()
            assert sim.url == url
            async with httpx.AsyncClient(base_url=url) as fresh:
                assert (await fresh.get("/models")).json()["data"][0]["max_model_len"] == slow.max_model_len
                assert (await gauges(fresh, url))["vllm:request_success_total"] == 0
    assert (stats.served, stats.refused, stats.prompt_tokens) == (0, 0, _prompt_tokens(conversation("tides")))


async def test_capacity_share_is_the_used_share_of_slot_seconds():
    spec = SimSpec(batch_slots=2, decode_s_per_token=0.01, reply_tokens=40)  # 0.4 s each
    with ReplicaSim(spec) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            sim.reset_stats()
            await asyncio.gather(chat(client, conversation("tides")), chat(client, conversation("moths")))
            full = sim.stats()
            sim.reset_stats()
            await chat(client, conversation("eels"))
            half = sim.stats()
            sim.reset_stats()
            await asyncio.sleep(0.1)
            idle = sim.stats()
    assert full.busy_slot_s > 0.79  # two slots for 0.4 s each (a loaded machine only makes them late)
    assert 0.8 < full.capacity_share <= 1
    assert 0.4 < half.capacity_share <= 0.5
    assert idle.capacity_share == 0
    assert (full.served, half.served, idle.served) == (2, 1, 0)


def test_a_simulated_fleet_serves_from_its_own_process():
    with simulated_fleet(2, FAST) as fleet:
        assert len(set(fleet.urls)) == 2
        for url in fleet.urls:
            assert httpx.post(f"{url}/chat/completions", json={"messages": conversation("tides")}).status_code == 200
        assert [s.served for s in fleet.stats()] == [1, 1]
        fleet.stop(0)
        with pytest.raises(httpx.ConnectError):
            httpx.post(f"{fleet.urls[0]}/chat/completions", json={"messages": conversation("tides")})
        fleet.start(0)
        assert httpx.post(f"{fleet.urls[0]}/chat/completions", json={"messages": conversation("tides")}).status_code == 200
        assert [s.served for s in fleet.stats()] == [2, 1]
        fleet.reset_stats()
        assert [s.served for s in fleet.stats()] == [0, 0]
