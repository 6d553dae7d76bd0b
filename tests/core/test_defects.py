"""The defect-code table (core/defects.py): every code a component emits is in it, and the docs list every row."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT
from core.defects import DEFECT_CODES, Defect, DefectCode, DefectSource, defect_code
from core.tables import by_name
from critic.findings import findings_from_measurements
from filters.content import CODES as CONTENT_CODES
from filters.quality import JUDGED


def emitted(module: Path, function: str) -> set[str]:
    """The string constants passed first to calls of `function` in a module (how checks name their codes)."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return found


def test_every_code_a_component_emits_is_in_the_table() -> None:
    slide = set().union(*(emitted(path, "Defect") for path in (PROJECT_ROOT / "render" / "defects").glob("*.py")))
    manuscript = emitted(PROJECT_ROOT / "agents" / "manuscript.py", "_issue")
    assert slide and manuscript  # the scan sees the checks
    for codes, source in (
        (slide, DefectSource.slide),
        (manuscript, DefectSource.manuscript),
        (set(CONTENT_CODES), DefectSource.content),
    ):
        assert codes <= set(DEFECT_CODES), codes - set(DEFECT_CODES)
        assert {DEFECT_CODES[c].source for c in codes} == {source}
    assert set(JUDGED) >= slide  # the quality judge may name anything inspection measures


def test_the_docs_list_every_code() -> None:
    docs = (PROJECT_ROOT / "docs" / "inspection.md").read_text(encoding="utf-8")
    missing = [code for code in DEFECT_CODES if f"| `{code}` |" not in docs]
    assert not missing, f"docs/inspection.md's table of defect codes lacks {missing}"


def test_an_unknown_code_is_an_error_not_a_silent_category() -> None:
    with pytest.raises(KeyError, match="not in core/defects.py's table"):
        findings_from_measurements([Defect("sparkles", "major", "div", "too shiny")])


def test_a_code_twice_in_the_table_is_refused() -> None:
    entry = defect_code("blank")
    with pytest.raises(ValueError, match="defect code 'blank' is in the table twice"):
        by_name(
            [entry, DefectCode("blank", DefectSource.slide, "render", "minor", "other", "other")], lambda e: e.code, "defect code"
        )
