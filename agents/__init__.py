"""The agent runtime: the loop, its tools, the sandbox and jail, the roles' prompts, policies and research."""
