"""A fleet of replicas (core/llm/fleet.py): the limit's law, sticky routing, back-pressure, a replica out and back.

The client tests run against fake OpenAI servers on loopback (real HTTP); what reached which server is
counted at the server."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from core.config import ConfigError, LLMConfig, Routing, check_fleet
from core.llm.client import ModelClient
from core.llm.fleet import Fleet, FleetState, admission, rendezvous
from core.llm.replica_limit import CallOutcome, Grant, Limit, Policy
from core.records import Message
from core.run.metering import Unit, unit_scope
from fakes.openai_server import ErrorReply, FakeOpenAIServer, FaultPlan, Reply

HELLO = [Message("user", "hello")]


def fleet_client(urls: list[str], **overrides) -> ModelClient:
    settings = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 2.0, "max_retries": 6} | overrides
    return ModelClient(LLMConfig(base_url=urls, model="fake", api_key_env="FAKE_KEY", **settings), "agent")


def ok(_: dict) -> Reply:
    return Reply("done", cached_tokens=3)


async def chat_key(client: ModelClient, key: str) -> None:
    """A call of unit `key` that names it (what a server received tells which unit sent it)."""
    with unit_scope(Unit(key=key, meter=client.meter)):
        await client.chat([Message("user", key)])


async def chat_as(client: ModelClient, key: str) -> None:
    with unit_scope(Unit(key=key, meter=client.meter)):  # counted in the client's meter, as outside any unit
        await client.chat(HELLO)


# ---------------------------------------------------------------- the limit's law


def test_the_limit_doubles_each_round_until_refused_then_cuts_once_per_burst_and_grows_one_per_round() -> None:
    limit = Limit(maximum=64, initial=4)
    for _ in range(4):  # one round of 4 successes
        limit.succeeded()
    assert limit.slots == 8
    assert limit.refused(seq=10, in_flight=10, next_seq=20)
    assert limit.slots == 6  # 0.8 x the 8 it allowed (fewer than the 10 in flight)
    assert not limit.refused(seq=15, in_flight=9, next_seq=21)  # sent before the cut: the same overload
    for _ in range(6):
        limit.succeeded()
    assert limit.slots == 7  # one per round of 6
    for _ in range(120):
        limit.succeeded()
    assert limit.slots == 9  # near the 10 it was refused at, it grows 16x slower
    assert limit.refused(seq=21, in_flight=12, next_seq=30) and limit.slots == 7


def test_metrics_hold_the_queue_at_its_target_and_slow_start_ends_when_it_first_passes_it() -> None:
    limit = Limit(maximum=64, initial=4, follows_metrics=True)
    limit.follow(waiting=0, kv_usage=0.1, target=2)
    assert limit.slots == 4  # slow start: successes move it, not the gauges
    for _ in range(12):
        limit.succeeded()
    limit.follow(waiting=6, kv_usage=0.5, target=2)  # the queue passed the target: slow start is over
    assert limit.slots == 14  # 16 less half the excess
    limit.succeeded()
    assert limit.slots == 14  # successes no longer move it
    limit.follow(waiting=0, kv_usage=0.99, target=2)
    assert limit.slots == 14  # a full KV cache: no growth
    limit.follow(waiting=0, kv_usage=0.5, target=2)
    assert limit.slots == 15


def test_rendezvous_moves_only_the_keys_of_a_replica_that_leaves() -> None:
    urls = [f"http://r{i}:8000/v1" for i in range(4)]
    before = {f"task-{k}": rendezvous(f"task-{k}", urls) for k in range(400)}
    after = {key: rendezvous(key, urls[1:]) for key in before}
    moved = {key for key in before if before[key] != after[key]}
    assert moved == {key for key, url in before.items() if url == urls[0]}
    assert 60 < len(moved) < 140  # about a quarter


# ---------------------------------------------------------------- routing


async def test_sticky_routing_by_hashing_alone_keeps_each_unit_on_one_replica_and_spreads_the_units() -> None:
    with FakeOpenAIServer(ok) as a, FakeOpenAIServer(ok) as b, FakeOpenAIServer(ok) as c:
        client = fleet_client([a.url, b.url, c.url], routing_load_bound=0)  # hashing alone
        for _ in range(3):
            await asyncio.gather(*(chat_as(client, f"task-{k}") for k in range(12)))
        servers = {srv.url: srv for srv in (a, b, c)}
        for k in range(12):
            pinned = servers[rendezvous(f"task-{k}", list(servers))]
            assert pinned.served >= 3  # every turn of the unit went to the replica its key names
        assert sorted(srv.served for srv in (a, b, c)) == sorted(
            3 * [rendezvous(f"task-{k}", list(servers)) for k in range(12)].count(url) for url in servers
        )
        usage = client.meter.snapshot()["agent"].replicas
        assert {url: u.calls for url, u in usage.items() if u.calls} == {
            url: srv.served for url, srv in servers.items() if srv.served
        }
        assert all(u.cached_tokens == 3 * u.calls for u in usage.values())
        await client.aclose()


async def test_round_robin_takes_each_replica_in_turn() -> None:
    with FakeOpenAIServer(ok) as a, FakeOpenAIServer(ok) as b:
        client = fleet_client([a.url, b.url], routing="round_robin")
        for _ in range(6):
            await chat_as(client, "one-unit")
        assert (a.served, b.served) == (3, 3)
        await client.aclose()


def keys_homed(urls: list[str], home: str, count: int) -> list[str]:
    """The first `count` unit keys whose first choice among `urls` is `home`."""
    return [k for k in (f"task-{i}" for i in range(10_000)) if rendezvous(k, urls) == home][:count]


async def hold_calls(state: FleetState, urls: list[str], keys: list[str], bound: float) -> list[Grant]:
    """One call per key, each holding its slot (a limit of 1,000: none waits), in the keys' order."""
    policy = Policy(maximum=1000, initial=1000, load_bound=bound)
    return [await state.acquire(tuple(urls), policy, key, Routing.sticky, f"t/{key}") for key in keys]


async def test_bounded_sticky_routing_moves_units_off_a_replica_past_the_bound_once_and_they_stay() -> None:
    urls = ["http://a:8000/v1", "http://b:8000/v1"]
    keys = keys_homed(urls, urls[0], 8)  # hashing alone pins all 8 to a
    state = FleetState()
    for key in keys:  # one at a time: a is never past the bound
        state.release((await hold_calls(state, urls, [key], bound=1.25))[0].ticket, CallOutcome.ok)
    assert state.snapshot()[urls[0]]["units"] == 8
    held = await hold_calls(state, urls, keys, bound=1.25)  # all at once
    # each call is admitted while a's calls, it included, stay within ceil(1.25 x the mean): 5 stay, 3 move to b
    assert [g.url[7] for g in held] == ["a", "a", "b", "a", "a", "b", "a", "b"]
    snapshot = state.snapshot()
    assert (snapshot[urls[0]]["units"], snapshot[urls[1]]["units"], snapshot[urls[1]]["moved_in"]) == (5, 3, 3)
    for grant in held:
        state.release(grant.ticket, CallOutcome.ok)
    again = await hold_calls(state, urls, keys, bound=1.25)  # a is idle now: the moved units stay where their cache is
    assert [g.url for g in again] == [g.url for g in held]
    assert state.snapshot()[urls[1]]["moved_in"] == 3  # counted once per unit
    fresh = FleetState()
    first_calls = await hold_calls(fresh, urls, keys, bound=1.25)  # no cache to keep yet: placed evenly, no move
    assert [g.url[7] for g in first_calls] == ["a", "b"] * 4 and fresh.snapshot()[urls[1]]["moved_in"] == 0
    unbounded = await hold_calls(FleetState(), urls, keys, bound=0)
    assert {g.url for g in unbounded} == {urls[0]}


async def test_bounded_routing_keeps_max_over_mean_within_the_bound_for_many_units() -> None:
    urls = [f"http://r{i}:8000/v1" for i in range(4)]
    state = FleetState()
    await hold_calls(state, urls, [f"rollout-{i}" for i in range(400)], bound=1.25)
    units = [state.snapshot()[u]["units"] for u in urls]
    assert sum(units) == 400 and max(units) <= 1.25 * 100


def test_a_load_bound_below_one_is_refused_naming_the_key() -> None:
    check_fleet("llm", LLMConfig(routing_load_bound=0))  # no bound
    with pytest.raises(ConfigError, match=r"roles.critic.routing_load_bound=0.8: .* >= 1"):
        check_fleet("roles.critic", LLMConfig(routing_load_bound=0.8))


async def test_a_replica_out_and_back_moves_only_its_own_units_under_the_bound() -> None:
    with FakeOpenAIServer(ok, latency_s=0.05) as b, FakeOpenAIServer(ok, latency_s=0.05) as c:
        with FakeOpenAIServer(ok, latency_s=0.05) as a:
            urls = [a.url, b.url, c.url]
            client = fleet_client(urls, probe_interval_s=0.1)
            keys = [key for trio in zip(*(keys_homed(urls, u, 3) for u in urls)) for key in trio]
            homes = {key: rendezvous(key, urls) for key in keys}
            servers = {s.url: s for s in (a, b, c)}

            async def play_round() -> dict[str, str]:
                seen = {url: len(s.requests) for url, s in servers.items()}
                await asyncio.gather(*(chat_key(client, key) for key in keys))
                return {r["messages"][0]["content"]: url for url, s in servers.items() for r in s.requests[seen[url] :]}

            assert await play_round() == homes
        await asyncio.gather(*(chat_key(client, key) for key in keys if homes[key] == a.url))  # finds a gone
        assert admission().snapshot()[a.url]["up"] is False
        during = await play_round()
        assert {k for k in keys if during[k] != homes[k]} == {k for k in keys if homes[k] == a.url}
        with FakeOpenAIServer(ok, port=a.port, latency_s=0.05) as back:
            servers[a.url] = back
            for _ in range(50):
                await asyncio.sleep(0.05)
                if admission().snapshot()[a.url]["up"]:
                    break
            assert await play_round() == homes  # its units came back; no other unit moved
        await client.aclose()


# ---------------------------------------------------------------- admission and back-pressure


async def test_the_limit_starts_small_and_doubles_with_each_round() -> None:
    with FakeOpenAIServer(ok, latency_s=0.2) as srv:
        client = fleet_client([srv.url], max_concurrency=8, initial_concurrency=2)
        await asyncio.gather(*(client.chat(HELLO) for _ in range(8)))
        # 2 at first; each success frees a slot and adds one (2 more calls): 4, then at most 5; never all 8 at once
        assert 4 <= srv.peak_in_flight <= 5
        await client.aclose()


@pytest.mark.parametrize("status", [429, 503, 529])
async def test_a_refusal_shrinks_the_replica_s_limit_and_every_call_still_succeeds(status: int) -> None:
    refusals = iter(range(3))

    def overloaded(_: dict) -> Reply | ErrorReply:
        return ErrorReply(status, "overloaded") if next(refusals, None) is not None else Reply("done")

    with FakeOpenAIServer(overloaded, latency_s=0.05) as srv:
        client = fleet_client([srv.url], max_concurrency=16, initial_concurrency=16)
        await asyncio.gather(*(client.chat(HELLO) for _ in range(16)))
        state = admission().snapshot()[srv.url]
        assert state["refusals"] == 3 and state["limit"] < 16 and state["up"]
        assert client.meter.snapshot()["agent"].replicas[srv.url].errors == 3
        await client.aclose()


async def test_a_vllm_queue_limit_is_not_overrun_once_the_limit_has_learnt_it() -> None:
    with FakeOpenAIServer(ok, latency_s=0.05, queue_limit=6) as srv:
        client = fleet_client([srv.url], max_concurrency=32, initial_concurrency=4, max_retries=20)
        await asyncio.gather(*(client.chat(HELLO) for _ in range(60)))  # the ramp finds the limit
        learnt = len(srv.refused)
        assert learnt >= 1
        await asyncio.gather(*(client.chat(HELLO) for _ in range(120)))
        assert len(srv.refused) - learnt <= 2  # 1.7% of the calls after the ramp, at most
        await client.aclose()


async def test_a_retry_after_pauses_the_replica_for_every_call() -> None:
    with FakeOpenAIServer(ok, faults=FaultPlan(script=["429"], retry_after_s=0.4)) as srv:
        client = fleet_client([srv.url], backoff_max_s=1.0)  # a pause is at most llm.backoff_max_s
        refused = asyncio.create_task(client.chat(HELLO))
        await asyncio.sleep(0.1)  # the first call was refused, with Retry-After: 0.4
        started = time.perf_counter()
        await client.chat(HELLO)
        assert time.perf_counter() - started >= 0.25  # a call that was not refused waited for the pause too
        await refused
        await client.aclose()


# ---------------------------------------------------------------- health


async def test_a_replica_that_dies_is_taken_out_its_units_move_and_it_rejoins_when_it_answers() -> None:
    with FakeOpenAIServer(ok) as b:
        with FakeOpenAIServer(ok) as a:
            client = fleet_client([a.url, b.url], probe_interval_s=0.1, routing_load_bound=0)  # hashing alone
            keys = keys_homed([a.url, b.url], a.url, 4)
            await asyncio.gather(*(chat_as(client, key) for key in keys))
            assert (a.served, b.served) == (4, 0)
        await asyncio.gather(*(chat_as(client, key) for key in keys))  # a is gone: its units finish on b
        assert b.served == 4 and admission().snapshot()[a.url]["up"] is False
        with FakeOpenAIServer(ok, port=a.port) as back:
            for _ in range(50):
                await asyncio.sleep(0.05)
                if admission().snapshot()[a.url]["up"]:
                    break
            await asyncio.gather(*(chat_as(client, key) for key in keys))
            assert back.served == 4 and b.served == 4  # its units came back to it
        assert client.meter.snapshot()["agent"].replicas[a.url].errors >= 1
        await client.aclose()


async def test_the_last_replica_up_stays_in_and_its_failures_are_retried_as_a_single_server_s() -> None:
    with FakeOpenAIServer(ok, faults=FaultPlan(script=["500", "500", "500"])) as srv:
        client = fleet_client([srv.url])
        await client.chat(HELLO)  # three failures in a row would take a replica out, were there another
        assert admission().snapshot()[srv.url]["up"] and srv.served == 4
        await client.aclose()


async def test_clients_of_one_process_share_each_replica_s_slots() -> None:
    with FakeOpenAIServer(ok, latency_s=0.05) as srv:
        agent, critic = (fleet_client([srv.url], max_concurrency=2, initial_concurrency=2) for _ in range(2))
        await asyncio.gather(*(c.chat(HELLO) for c in (agent, critic) for _ in range(6)))
        assert srv.served == 12 and srv.peak_in_flight == 2  # the two roles' calls together
        await agent.aclose()
        await critic.aclose()


def test_a_fleet_file_is_reread_when_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listing = tmp_path / "replicas.txt"
    listing.write_text("# the fleet\nhttp://a:8000/v1\n\n")
    fleet = Fleet(LLMConfig(base_urls_file=str(listing)))
    assert fleet.urls == ("http://a:8000/v1",)
    monkeypatch.setattr(Fleet, "FILE_CHECK_S", 0.0)
    listing.write_text("http://a:8000/v1\nhttp://b:8000/v1  # added\n")
    os.utime(listing, ns=(1, 10**18))
    assert fleet.urls == ("http://a:8000/v1", "http://b:8000/v1")
