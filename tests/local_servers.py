"""The local model servers running on this machine, found by their command line: the local-server tests and the
real-model pipeline test check that none is left behind."""

from __future__ import annotations

import psutil


def servers_running(marker: str) -> list[psutil.Process]:
    """The local model servers (core.llm.local_server starts `python -m core.llm.llama_server`) whose command line holds
    `marker`: the model's path, or `--port N ` (other tests' servers may run meanwhile)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            command = " ".join(process.info["cmdline"] or ()) + " "
            if "core.llm.llama_server" in command and marker in command:
                found.append(process)
        except psutil.Error:
            continue
    return found
