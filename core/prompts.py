"""Prompt templates: Jinja files with strict undefined variables, one folder per package.

Each template has a stable id (its path from the project root, e.g. `critic/prompts/slide_review.j2`)
and a content hash over its own text and every template it includes, imports or extends. `render`
names both to the unit being worked on (`core.run.metering`), so each record says which template
versions made it; `manifest` hashes a run's template folders into its config hash, so a rerun
cannot silently mix two versions of a prompt.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path
from typing import Iterable

import jinja2
from jinja2 import meta

from core.config import PROJECT_ROOT
from core.run.metering import note_template

SUFFIX = ".j2"


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


def template_id(folder: Path, name: str) -> str:
    path = Path(os.path.abspath(folder / name))
    return path.relative_to(PROJECT_ROOT).as_posix() if path.is_relative_to(PROJECT_ROOT) else path.as_posix()


def _stamp(folder: str, name: str) -> tuple[int, int]:
    stat = os.stat(os.path.join(folder, name))
    return stat.st_mtime_ns, stat.st_size


@cache
def _children(folder: str, name: str, stamp: tuple[int, int]) -> tuple[str, ...]:
    """The templates `name` includes, imports or extends (as of `stamp`)."""
    env = _environment(folder)
    source, _, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]  # jinja's loader is optional; ours has one
    return tuple(sorted(n for n in meta.find_referenced_templates(env.parse(source)) if n))


def _closure(folder: str, name: str) -> tuple[tuple[str, tuple[int, int]], ...]:
    """`name` and every template it pulls in, each with its file's stamp, in a fixed order."""
    found: dict[str, tuple[int, int]] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        if current not in found:
            found[current] = _stamp(folder, current)
            todo.extend(_children(folder, current, found[current]))
    return tuple(sorted(found.items()))


@cache
def _digest(folder: str, closure: tuple[tuple[str, tuple[int, int]], ...]) -> str:
    text = "\n".join(f"{name}\n{Path(folder, name).read_text(encoding='utf-8')}" for name, _ in closure)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def template_digest(folder: Path, name: str) -> str:
    """The content hash of `folder/name` with what it includes (recomputed when any of those files changes)."""
    return _digest(str(folder), _closure(str(folder), name))


def render(folder: Path, name: str, **variables: object) -> str:
    """Render `folder/name`; a missing variable is an error, never an empty string."""
    text = _environment(str(folder)).get_template(name).render(**variables).strip()
    cite(folder, name)
    return text


def cite(folder: Path, name: str) -> None:
    """Name `folder/name` (id and hash) to the current unit: what a cached answer of it was made from."""
    note_template(template_id(folder, name), template_digest(folder, name))


def manifest(folders: Iterable[Path]) -> dict[str, str]:
    """Every template under `folders` (recursively): id -> content hash."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob(f"*{SUFFIX}")):
            name = path.relative_to(folder).as_posix()
            found[template_id(folder, name)] = template_digest(folder, name)
    return found
