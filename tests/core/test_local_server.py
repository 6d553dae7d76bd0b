"""`llm=local`: the real llama-cpp-python server with the bundled SmolLM2, started and stopped by `serving`."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pytest

from core.config import PROJECT_ROOT, Backend, ConfigError, LLMConfig, RoleConfig
from core.llm.client import ModelClient
from core.llm.local_server import LocalServerError, serving
from core.llm.players import LOCAL_UNSTARTED, Players
from core.protocols import Play
from core.records import Message
from tests.local_servers import servers_running

pytestmark = pytest.mark.real_model


@dataclass
class Cfg:
    llm: LLMConfig = field(
        default_factory=lambda: LLMConfig(backend=Backend.local, base_url=LOCAL_UNSTARTED, model="smol", max_tokens=16)
    )
    roles: dict[str, RoleConfig] = field(
        default_factory=lambda: {"agent": RoleConfig(), "critic": RoleConfig(backend=Backend.scripted)}
    )


def client_of(cfg: Cfg, role: str) -> object:
    """The role's model client, or "stand-in" where its backend plays it by rule."""
    return Players(cfg.llm, cfg.roles).play(role, Play(lambda client: client, lambda _: "stand-in"))


def test_a_served_model_answers_with_its_usage_and_the_server_stops_after(tmp_path: Path) -> None:
    cfg = Cfg()
    with serving(cfg, tmp_path) as servers:
        assert cfg.llm.base_url.startswith("http://127.0.0.1:") and cfg.llm.context_window == 8192
        assert client_of(cfg, "critic") == "stand-in"  # a scripted role stays scripted
        client = client_of(cfg, "agent")

        async def ask() -> tuple[list[str], object]:
            try:
                return await client.list_models(), await client.chat([Message("user", "Say hello.")])
            finally:
                await client.aclose()

        models, reply = asyncio.run(ask())
        assert models == ["smol"] and reply.usage_reported and reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
        pid = servers[0].process.pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{cfg.llm.base_url}/models", timeout=2, trust_env=False)
    assert (tmp_path / "local_server_0.log").stat().st_size > 0


def test_an_error_inside_stops_the_server(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"), serving(Cfg(), tmp_path) as servers:
        pid = servers[0].process.pid
        raise RuntimeError("boom")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_killed_entry_point_leaves_no_server(tmp_path: Path) -> None:
    """Killed while the server generates a long reply: the server goes at once, not when the reply is done."""
    script = textwrap.dedent(f"""
        import os, signal, sys, threading, time
        import httpx
        sys.path.insert(0, {str(PROJECT_ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from test_local_server import Cfg
        from core.llm.local_server import serving
        cfg = Cfg()
        with serving(cfg, Path({str(tmp_path)!r})) as servers:
            print(servers[0].process.pid, flush=True)
            story = {{"model": "smol", "messages": [{{"role": "user", "content": "Tell a long story. " * 300}}], "max_tokens": 4000}}
            threading.Thread(target=httpx.post, args=(cfg.llm.base_url + "/chat/completions",), kwargs={{"json": story, "timeout": 600}}, daemon=True).start()
            time.sleep(3)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 15
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    cfg = Cfg()
    cfg.llm.model_path = str(tmp_path / "none.gguf")
    with pytest.raises(ConfigError, match="none.gguf"), serving(cfg, tmp_path):
        pass


def test_a_file_that_is_not_a_model_fails_fast_naming_the_log(tmp_path: Path) -> None:
    cfg = Cfg()
    cfg.llm.model_path = str(tmp_path / "bad.gguf")
    Path(cfg.llm.model_path).write_bytes(b"not a gguf file")
    started = time.monotonic()
    with pytest.raises(LocalServerError, match="local_server_0.log"), serving(cfg, tmp_path):
        pass
    assert time.monotonic() - started < 120 and not servers_running(cfg.llm.model_path)


def test_an_unstarted_local_endpoint_is_refused() -> None:
    with pytest.raises(ConfigError, match="no local model server was started"):
        client_of(Cfg(), "agent")


def test_a_role_can_run_on_its_own_local_model_while_the_backbone_is_hosted(tmp_path: Path) -> None:
    cfg = Cfg()
    cfg.llm = LLMConfig(backend=Backend.openai, base_url="https://api.example.com/v1", model="gpt")
    cfg.roles["critic"] = RoleConfig(backend=Backend.local, model="smol")
    with serving(cfg, tmp_path) as servers:
        assert len(servers) == 1 and cfg.roles["critic"].base_url == servers[0].url
        assert cfg.llm.base_url == "https://api.example.com/v1"
        client = client_of(cfg, "critic")
        assert isinstance(client, ModelClient) and client.cfg.base_url == servers[0].url
