"""What a tool is (`agents.tools.registry`) and the runtime's tools; every role's toolset: `agents.tools.toolsets`."""

from agents.tools.registry import ROLES, Tool, ToolContext, ToolError, Toolset

__all__ = ["ROLES", "Tool", "ToolContext", "ToolError", "Toolset"]
