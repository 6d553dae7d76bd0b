"""The runtime's tools and their registry; importing this package registers the built-in tools."""

# Registration happens on import, in this order, which is the order of the schemas.
from agents.tools import files, download, command, control  # noqa: F401, I001
from agents.tools.registry import REGISTRY, ROLES, Observation, Registry, Tool, ToolContext, ToolError, Toolset, tool, toolset_for

__all__ = ["REGISTRY", "ROLES", "Observation", "Registry", "Tool", "ToolContext", "ToolError", "Toolset", "tool", "toolset_for"]
