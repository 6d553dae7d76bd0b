"""The built-in slide designs name fonts that this machine really has (scripts/install_system.sh)."""

from __future__ import annotations

import re
import subprocess

import pytest

from agents.policies.designs import DESIGNS


@pytest.mark.parametrize("family", sorted({f for d in DESIGNS for f in re.findall(r"'([^']+)'", d.font)}))
def test_every_named_font_family_is_installed(family: str) -> None:
    matched = subprocess.run(["fc-match", "-f", "%{family}", family], capture_output=True, text=True, check=True).stdout
    assert family in matched.split(","), f"{family!r} is not installed (fontconfig falls back to {matched!r})"
