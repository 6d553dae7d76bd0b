"""The agent runtime: loop, tools, sandbox, renderer, inspection, roles."""
