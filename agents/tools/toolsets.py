"""Every tool of the project, and the toolset each role is offered: build toolsets here.

Each tool module ends with `TOOLS`, the tools it defines (`Tool.from_function(fn, *roles)`);
this module lists those lists, in the order the model sees the schemas. A new tool is one
entry in its module's `TOOLS`; a new tool module is one line here (docs/extending.md).
"""

from __future__ import annotations

from typing import Iterable

from agents.research import tools as research
from agents.tools import command, control, download, files, inspect
from agents.tools.registry import ROLES, Tool, Toolset
from core.tables import by_name

__all__ = ["ROLES", "TOOLS", "toolset_for"]


TOOLS: dict[str, Tool] = by_name(
    (
        *files.TOOLS,
        *download.TOOLS,
        *command.TOOLS,
        *control.TOOLS,
        *inspect.TOOLS,  # before the research tools, as synthesis runs offered them (test_registry)
        *research.TOOLS,
    ),
    lambda tool: tool.name,
    "tool",
)


def toolset_for(role: str, extra_removed: Iterable[str] = ()) -> Toolset:
    """The tools offered to `role` ("single": every role's), less `extra_removed`."""
    roles: tuple[str, ...]
    if role == "single":
        roles = ROLES
    elif role in ROLES:
        roles = (role,)
    else:
        raise ValueError(f"unknown role {role!r}; roles are {ROLES} and 'single'")
    removed = set(extra_removed)
    names = dict.fromkeys(t.name for r in roles for t in TOOLS.values() if r in t.roles and t.name not in removed)
    return Toolset.of(TOOLS[n] for n in names)
