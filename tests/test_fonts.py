"""Every font family the project names resolves to itself through fontconfig (scripts/install_system.sh installs them).

A family that is not installed falls back to another font of other widths: a layout
difference (a title that wraps and overlaps) instead of a clear failure. Sources: the slide
templates and their design presets, the report's CSS and templates, and the test fixtures.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from agents.policies.designs import DESIGNS
from core.config import PROJECT_ROOT
from deck.fonts import GENERIC

NOT_A_FAMILY = GENERIC | {"inherit", "initial", "unset"}  # generic families and CSS-wide keywords
DECLARATION = re.compile(r"\bfont(-family)?\s*:\s*([^;}<>]+)")
SHORTHAND_LEAD = re.compile(
    r"^(?:(?:italic|oblique|normal|bold|bolder|lighter|small-caps|\d[\w./%-]*)\s+)+"
)  # style, weight, size
SOURCES = {
    "slide templates and design presets": ["agents/policies/templates/*.j2", "agents/roles/prompts/*.j2"],
    "report CSS and templates": ["pipeline/report/static/*.css", "pipeline/report/templates/*.j2"],
    "test fixtures": ["tests/**/*.html", "tests/**/*.py"],
}


def families(value: str, shorthand: bool) -> set[str]:
    """The family names of a `font-family` value, or of a `font` shorthand (its families follow the size)."""
    items = [item.strip() for item in value.split(",")]
    if shorthand:
        items[0] = SHORTHAND_LEAD.sub("", items[0])
    names = {item.strip("'\" ") for item in items}
    return {n for n in names if n and "{" not in n and n.lower() not in NOT_A_FAMILY}


def named_in(patterns: list[str]) -> set[str]:
    found: set[str] = set()
    for pattern in patterns:
        for path in PROJECT_ROOT.glob(pattern):
            if path.resolve() == Path(__file__).resolve():
                continue
            for match in DECLARATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
                found |= families(match.group(2).replace("\\n", " "), shorthand=match.group(1) is None)
    return found


NAMED = {source: named_in(patterns) for source, patterns in SOURCES.items()}
NAMED["slide templates and design presets"] |= {
    f for d in DESIGNS for f in families(d.font, shorthand=False)
}  # the templates' {{ d.font }}


def test_every_source_names_fonts() -> None:
    """The scan itself works: each source names at least one family (else a broken pattern would pass everything)."""
    assert all(NAMED.values()), NAMED


@pytest.mark.parametrize("family", sorted(set().union(*NAMED.values())))
def test_every_named_font_family_is_installed(family: str) -> None:
    matched = subprocess.run(["fc-match", "-f", "%{family}", family], capture_output=True, text=True, check=True).stdout
    assert family in matched.split(","), (
        f"{family!r} is not installed (fontconfig falls back to {matched!r}); install it in scripts/install_system.sh"
    )
