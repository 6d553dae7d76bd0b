"""What a model endpoint costs: a price belongs to the endpoint and model a role calls, not to a config group.

`price_of(cfg)` resolves, in order:
1. `price.input_per_mtok` and `output_per_mtok` given: those (US dollars per million tokens);
2. the scripted backend's rule-based stand-ins, a model on this machine (`backend=local`, or
   loopback `base_url`s), or a fleet priced by the hour (`price.gpu_hour`): nothing per token;
3. the model's list price in `LIST_PRICES` (below);
4. otherwise unknown: its calls are counted, their cost is shown as unknown (never 0, never a guess).
`price.gpu_hour` (x `price.gpus`, the GPUs of each replica) adds each replica's busy time: each call
pays its share of the time its replica was busy (`BusyClock`), the way a self-hosted fleet is paid for.
"""

from __future__ import annotations

import ipaddress
import re
import threading
import time
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

from omegaconf import DictConfig, OmegaConf

from core.config import Backend, ConfigError, LLMConfig, RoleConfig, replica_urls, resolve_role, to_typed

# US dollars per million tokens: (input, output, cached input). The providers' list prices for
# standard (not batch, not priority) requests as the author knew them in 2025-08, written down from
# openai.com/api/pricing, anthropic.com/pricing and ai.google.dev/gemini-api/docs/pricing (Gemini:
# prompts up to 200K tokens); this machine cannot reach those pages to check them again. Prices
# change: `llm.price.*` (or `roles.<role>.price.*`) overrides them.
LIST_PRICES_CHECKED = "2025-08"
LIST_PRICES: dict[str, tuple[float, float, Optional[float]]] = {
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "o3": (2.00, 8.00, 0.50),
    "o4-mini": (1.10, 4.40, 0.275),
    "gpt-5": (1.25, 10.00, 0.125),
    "gpt-5-mini": (0.25, 2.00, 0.025),
    "gpt-5-nano": (0.05, 0.40, 0.005),
    "claude-sonnet-4": (3.00, 15.00, 0.30),
    "claude-3-5-haiku": (0.80, 4.00, 0.08),
    "gemini-2.5-pro": (1.25, 10.00, 0.31),
    "gemini-2.5-flash": (0.30, 2.50, 0.075),
}
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    input_per_mtok: Optional[float]  # None: unknown
    output_per_mtok: Optional[float]
    cached_input_per_mtok: Optional[float]  # None: as input
    fleet_per_hour: float  # gpu_hour x gpus; 0 when the endpoint is not priced by the hour
    source: str  # where the price comes from, for the report

    @property
    def known(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None

    def cost(self, prompt: int, completion: int, cached: int, busy_s: float) -> Optional[float]:
        """US dollars for one call; None when the price is unknown."""
        if self.input_per_mtok is None or self.output_per_mtok is None:
            return None
        cached_rate = self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        tokens = (prompt - cached) * self.input_per_mtok + cached * cached_rate + completion * self.output_per_mtok
        return tokens / 1e6 + busy_s * self.fleet_per_hour / 3600


def is_loopback(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def list_price(model: str) -> Optional[tuple[float, float, Optional[float]]]:
    """The table's price for `model`, also as `provider/model` or with a date suffix (`gpt-4o-2024-08-06`)."""
    name = model.lower().rsplit("/", 1)[-1]
    return LIST_PRICES.get(name) or LIST_PRICES.get(_DATED.sub("", name))


def price_of(cfg: LLMConfig) -> Price:
    """The price of the endpoint and model `cfg` names (see the module docstring for the order)."""
    p = cfg.price
    fleet = (p.gpu_hour or 0.0) * p.gpus
    if p.input_per_mtok is not None and p.output_per_mtok is not None:
        return Price(p.input_per_mtok, p.output_per_mtok, p.cached_input_per_mtok, fleet, "config (llm.price)")
    if cfg.backend == Backend.scripted:
        return Price(0.0, 0.0, None, 0.0, "rule-based stand-ins: free")
    if cfg.backend == Backend.local or all(map(is_loopback, replica_urls(cfg))):
        return Price(0.0, 0.0, None, fleet, "this machine" + (" (gpu_hour)" if fleet else ": free"))
    if p.gpu_hour is not None:
        return Price(0.0, 0.0, None, fleet, f"fleet at ${p.gpu_hour:g}/GPU-hour x {p.gpus}")
    listed = list_price(cfg.model)
    if listed is not None:
        return Price(*listed, 0.0, f"list price of {cfg.model} ({LIST_PRICES_CHECKED})")
    return Price(None, None, None, 0.0, f"unknown: {cfg.model} at {', '.join(replica_urls(cfg))} (set llm.price.*)")


def check_caps(cfg: DictConfig, roles: tuple[str, ...]) -> None:
    """A cost cap (run.max_cost_usd, rollouts.max_cost_usd) needs every role's price: ConfigError naming the unpriced."""
    caps = [key for key in ("run.max_cost_usd", "rollouts.max_cost_usd") if OmegaConf.select(cfg, key) is not None]
    for key in caps:
        value = OmegaConf.select(cfg, key)
        if value <= 0:
            raise ConfigError(f"{key}={value}: a cap must be > 0 (or null: no cap)")
    if not caps:
        return
    llm, overrides = to_typed(LLMConfig, cfg.llm), to_typed(dict[str, RoleConfig], cfg.roles)
    for role in dict.fromkeys([*roles, *overrides]):
        resolved = resolve_role(llm, overrides, role)
        if not price_of(resolved).known:
            raise ConfigError(
                f"{caps[0]} is set but role {role}'s price is unknown ({price_of(resolved).source}): "
                f"give roles.{role}.price.input_per_mtok and output_per_mtok (or llm.price.*)"
            )


class BusyClock:
    """How long an endpoint was busy, shared among the calls in flight: while n calls are in flight,
    each is charged 1/n of the time, so the shares add up to the time at least one call was in flight.
    Per process: workers of several processes sharing one fleet each count their own busy time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._shared = 0.0  # seconds of busy time per call in flight, accumulated
        self._at = time.perf_counter()

    def _advance(self) -> None:
        now = time.perf_counter()
        if self._in_flight:
            self._shared += (now - self._at) / self._in_flight
        self._at = now

    def enter(self) -> float:
        with self._lock:
            self._advance()
            self._in_flight += 1
            return self._shared

    def leave(self, mark: float) -> float:
        """This call's share of the busy time since `enter` returned `mark`."""
        with self._lock:
            self._advance()
            self._in_flight -= 1
            return self._shared - mark


_clocks: dict[str, BusyClock] = {}
_clocks_lock = threading.Lock()


def busy_clock(base_url: str) -> BusyClock:
    """The process's clock of the replica at `base_url` (one per replica, whichever roles call it)."""
    with _clocks_lock:
        return _clocks.setdefault(base_url, BusyClock())
