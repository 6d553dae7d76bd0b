"""Every tool of the project, registered: build toolsets through this module.

`agents.tools` registers the runtime's file, command and control tools; the
inspection tools and the Researcher's retrieval tools register on import here
(kept out of `agents.tools` itself: the research backends import its download
helpers, and a cycle would follow).
"""

from agents.research import tools as _research  # noqa: F401  (search_web, fetch_url, convert_to_markdown, ...)
from agents.tools import ROLES, toolset_for
from agents.tools import inspect as _inspect  # noqa: F401  (inspect_slide, inspect_manuscript)

__all__ = ["ROLES", "toolset_for"]
