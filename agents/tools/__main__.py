"""`python -m agents.tools list`: every role's tool schemas as JSON (role -> list of schemas)."""

import json

from agents.tools.toolsets import ROLES, toolset_for
from core.cli import OneLineParser


def main() -> None:
    parser = OneLineParser(prog="python -m agents.tools", description=__doc__)
    parser.add_argument("command", choices=["list"])
    parser.parse_args()
    schemas = {role: toolset_for(role).schemas() for role in (*ROLES, "single")}
    print(json.dumps(schemas, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
