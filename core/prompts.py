"""Prompt templates: Jinja files with strict undefined variables, one folder per package."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2


@cache
def _environment(folder: str) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(folder: Path, name: str, **variables: object) -> str:
    """Render `folder/name`; a missing variable is an error, never an empty string."""
    return _environment(str(folder)).get_template(name).render(**variables).strip()
