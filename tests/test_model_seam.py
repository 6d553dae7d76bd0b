"""One model seam: every role gets its player through `core.llm.players` (a client around a backend's transport,
or the scripted backend's stand-in), so no other product module builds a client or asks for the backend."""

from __future__ import annotations

import re
from pathlib import Path

from core.config import PROJECT_ROOT

PACKAGES = ("core", "agents", "render", "deck", "critic", "filters", "pipeline", "train", "eval")
SEAM = {"core/llm/players.py", "core/llm/client.py"}  # the table, and the client it wraps around transports
# the backends' names, what a stand-in costs (nothing), and the servers the local backend starts
BACKEND_AWARE = {"core/config.py", "core/llm/prices.py", "core/llm/local_server.py"}
FORBIDDEN = {
    "a client built outside the seam": re.compile(r"\bModelClient\("),
    "a backend compared by a caller": re.compile(r"\.backend\s*[!=]=|[!=]=\s*Backend\.\w"),
    "the removed None-for-scripted helpers": re.compile(r"\b(is_scripted|role_client|client_for)\b"),
}


def product_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (PROJECT_ROOT / package).rglob("*.py"))


def test_no_product_module_builds_a_client_or_substitutes_a_stand_in() -> None:
    found = []
    for path in product_modules():
        name = path.relative_to(PROJECT_ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        for what, pattern in FORBIDDEN.items():
            allowed = SEAM | (BACKEND_AWARE if what == "a backend compared by a caller" else set())
            if name not in allowed:
                found += [f"{name}:{text[: m.start()].count(chr(10)) + 1}: {what}" for m in pattern.finditer(text)]
    assert not found, "\n".join(found)


def test_the_check_sees_a_substitution() -> None:
    planted = 'client = None if cfg.backend == "scripted" else ModelClient(cfg)\n'
    assert all(pattern.search(planted) for what, pattern in FORBIDDEN.items() if what != "the removed None-for-scripted helpers")
