"""Prices belong to the endpoint and model: loopback and self-hosted free, list prices by model, unknown stays unknown."""

from __future__ import annotations

import asyncio
import time

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from core.config import PROJECT_ROOT, ConfigError, LLMConfig, PriceConfig, RoleConfig, check_price, resolve_role
from core.llm.client import ModelClient
from core.llm.prices import BusyClock, check_caps, price_of
from core.records import Message
from eval.config import store_schema as store_eval_schema
from eval.config import validate as validate_eval
from fakes.openai_server import FakeOpenAIServer, Reply
from pipeline.config import store_schema as store_synthesize_schema
from pipeline.config import validate

HOSTED = "https://api.example.com/v1"


def synth(*overrides: str, name: str = "synthesize"):
    {"synthesize": store_synthesize_schema, "eval": store_eval_schema}[name]()
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
        return compose(name, overrides=list(overrides))


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1", "http://localhost:1234/v1", "http://[::1]:8000/v1", "http://127.0.0.2/v1"]
)
def test_an_endpoint_on_this_machine_costs_nothing_whatever_the_model(url: str) -> None:
    price = price_of(LLMConfig(base_url=url, model="gpt-4o"))
    assert price.known and price.cost(10**6, 10**6, 0, 5.0) == 0.0


def test_the_openai_group_pointed_at_this_machine_charges_nothing() -> None:
    """The bug this fixes: llm=openai llm.base_url=http://127.0.0.1:... charged a local model at gpt-4o's price."""
    cfg = OmegaConf.to_object(synth("llm=openai", "llm.base_url=http://127.0.0.1:8080/v1").llm)
    assert price_of(cfg).cost(1000, 1000, 0, 0.0) == 0.0
    hosted = OmegaConf.to_object(synth("llm=openai").llm)  # gpt-4o at api.openai.com: its list price
    assert price_of(hosted).cost(10**6, 10**6, 0, 0.0) == pytest.approx(12.5)


@pytest.mark.parametrize("group", ["local", "vllm"])
def test_self_hosted_groups_cost_nothing_per_token_even_on_another_host(group: str) -> None:
    cfg = OmegaConf.to_object(synth(f"llm={group}", "llm.base_url=http://gpu-host:8000/v1").llm)
    assert price_of(cfg).cost(10**6, 10**6, 0, 0.0) == 0.0


def test_list_prices_by_model_name_with_provider_prefix_or_date() -> None:
    for model in ("gpt-4o", "openai/gpt-4o", "gpt-4o-2024-08-06", "GPT-4o"):
        price = price_of(LLMConfig(base_url=HOSTED, model=model))
        assert (price.input_per_mtok, price.output_per_mtok, price.cached_input_per_mtok) == (2.5, 10.0, 1.25), model
    assert price_of(LLMConfig(base_url=HOSTED, model="gpt-4o-mini")).input_per_mtok == 0.15  # not gpt-4o's
    # cached prompt tokens at their own rate: 1M prompt tokens of which half cached, 1M completion tokens
    assert price_of(LLMConfig(base_url=HOSTED, model="gpt-4o")).cost(10**6, 10**6, 5 * 10**5, 0.0) == pytest.approx(
        1.25 + 0.625 + 10
    )


def test_an_unlisted_hosted_model_has_an_unknown_price_not_zero() -> None:
    price = price_of(LLMConfig(base_url=HOSTED, model="my-finetune"))
    assert not price.known and price.cost(100, 100, 0, 0.0) is None and "unknown" in price.source


def test_a_configured_price_wins_even_on_this_machine() -> None:
    price = price_of(
        LLMConfig(base_url="http://127.0.0.1:8000/v1", model="x", price=PriceConfig(input_per_mtok=1.0, output_per_mtok=4.0))
    )
    assert price.cost(10**6, 10**6, 0, 0.0) == pytest.approx(5.0)


def test_a_role_on_another_model_does_not_inherit_the_backbone_s_price() -> None:
    llm = LLMConfig(base_url=HOSTED, model="my-finetune", price=PriceConfig(input_per_mtok=0.1, output_per_mtok=0.2))
    roles = {
        "critic": RoleConfig(model="gpt-4o-mini"),
        "judge": RoleConfig(temperature=0.0),
        "other": RoleConfig(model="mystery"),
    }
    assert price_of(resolve_role(llm, roles, "judge")).input_per_mtok == 0.1  # same endpoint and model: the backbone's price
    assert price_of(resolve_role(llm, roles, "critic")).input_per_mtok == 0.15  # its own list price
    assert not price_of(resolve_role(llm, roles, "other")).known  # unknown, not the backbone's
    priced = {"other": RoleConfig(model="mystery", price=PriceConfig(input_per_mtok=3.0, output_per_mtok=3.0))}
    assert price_of(resolve_role(llm, priced, "other")).input_per_mtok == 3.0


def test_gpu_hours_price_the_endpoint_s_busy_time_shared_by_the_calls_in_flight() -> None:
    """Two calls in flight together for ~0.4 s: ~0.4 s of the fleet's time in all, not 0.8."""
    gpu_hour, gpus = 36.0, 2  # $0.02 per second of the fleet
    with FakeOpenAIServer(lambda _: Reply("ok"), latency_s=0.4, strict="vllm-glm") as srv:
        client = ModelClient(
            LLMConfig(base_url=srv.url, model="m", max_concurrency=2, price=PriceConfig(gpu_hour=gpu_hour, gpus=gpus))
        )

        async def two() -> None:
            await asyncio.gather(client.chat([Message("user", "a")]), client.chat([Message("user", "b")]))
            await client.aclose()

        asyncio.run(two())
    usage = client.meter.totals()
    assert usage.cost == pytest.approx(0.4 * gpu_hour * gpus / 3600, rel=0.35)
    assert usage.cost < 0.7 * usage.latency_s * gpu_hour * gpus / 3600  # each call was charged half its wall time


def test_the_busy_clock_splits_overlapping_time_between_the_calls() -> None:
    clock = BusyClock()
    a = clock.enter()
    b = clock.enter()
    first = clock.leave(a)
    time.sleep(0.05)  # b alone for 50 ms: more than a ever had alone (the microseconds before b entered)
    second = clock.leave(b)
    assert first >= 0 and second >= first + 0.04  # b left last: it had the time alone after a left


def test_prices_that_cannot_work_are_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="roles.critic.price: give both"):
        check_price("roles.critic.price", PriceConfig(input_per_mtok=1.0))
    with pytest.raises(ConfigError, match="llm.price: gpu_hour must be >= 0"):
        check_price("llm.price", PriceConfig(gpu_hour=-1.0))
    with pytest.raises(ConfigError, match="llm.price"):
        validate(synth("llm.price.gpus=0"))


def test_a_cost_cap_needs_every_role_s_price() -> None:
    validate(synth("run.max_cost_usd=1", "llm=scripted"))  # nothing to pay
    cfg = synth("run.max_cost_usd=1", "llm=openai", "roles.critic.model=my-finetune")
    with pytest.raises(ConfigError, match="role critic's price is unknown"):
        check_caps(cfg, ("agent", "critic"))
    validate(
        synth(
            "rollouts.max_cost_usd=0.5",
            "llm=openai",
            "roles.critic.model=my-finetune",
            "roles.critic.price.input_per_mtok=1",
            "roles.critic.price.output_per_mtok=2",
        )
    )
    with pytest.raises(ConfigError, match="run.max_cost_usd=-1"):
        validate(synth("run.max_cost_usd=-1"))


def test_an_eval_cost_cap_needs_the_judge_s_price(tmp_path) -> None:
    tasks = tmp_path / "eval.parquet"
    tasks.write_bytes(b"")
    cfg = synth(f"tasks={tasks}", "run.max_cost_usd=1", "judge=openai", "judge.endpoint.model=my-judge", name="eval")
    with pytest.raises(ConfigError, match="judge's price is unknown"):
        validate_eval(cfg)
