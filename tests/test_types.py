"""mypy is wired as `make test` runs it ([tool.mypy] in pyproject.toml): a class that lacks a protocol's method, used
where core.protocols wants that protocol, is an error; and core/ is checked with --strict's flags."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ["--config-file", str(ROOT / "pyproject.toml")]

GATES = """
from core.protocols import Gate
from core.records import Verdict
from core.seams.candidate import Candidate


class Judging:
    name = "judging"

    async def judge(self, candidate: Candidate) -> Verdict:
        raise NotImplementedError


class NotJudging:  # no judge()
    name = "not_judging"


GATES: dict[str, Gate] = {"judging": Judging(), "not_judging": NotJudging()}
"""

LOOSE = """
from typing import Any


def loose(value: Any) -> dict:
    return value
"""


def errors(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if ": error: " in line]


def test_a_class_missing_a_protocol_method_is_an_error(tmp_path: Path) -> None:
    probe = tmp_path / "protocol_probe.py"
    probe.write_text(GATES)
    # the project's cache: make test's mypy has just filled it (cold, this takes ~15 s)
    stdout, stderr, status = api.run([*CONFIG, "--cache-dir", str(ROOT / ".mypy_cache"), str(probe)])
    found = errors(stdout)
    assert status == 1 and len(found) == 1, stdout + stderr
    # (an unchanged probe's errors come from the cache, under the path of the run that wrote them)
    assert ":18: error: " in found[0] and '"NotJudging"' in found[0] and '"Gate"' in found[0], found


def test_core_is_checked_with_the_strict_flags(tmp_path: Path) -> None:
    # a module of core (core/tables.py) read as LOOSE: a bare dict and a returned Any, which only --strict refuses
    probe = tmp_path / "loose.py"
    probe.write_text(LOOSE)
    target = str(ROOT / "core" / "tables.py")
    stdout, stderr, status = api.run(
        [*CONFIG, "--cache-dir", str(tmp_path / "cache"), "--shadow-file", target, str(probe), target]
    )
    codes = sorted(line.rsplit("[", 1)[-1].rstrip("]") for line in errors(stdout))
    assert status == 1 and codes == ["no-any-return", "type-arg"], stdout + stderr
