"""What every command of the project shares: one exit-code table, errors as one line, one parser convention.

| exit | meaning | raised as |
|---|---|---|
| 0 | done | |
| 1 | it ran, and what it was to make failed or came out empty (a stage received nothing, a deck failed, a check found a difference) | `Failed` |
| 2 | bad input, found before any work: a config, an argument, a file or a run directory that is not what the command reads | `InputError` |
| 3 | stopped by the run's spending cap (`run.max_cost_usd`, `run.max_tokens`); what finished is kept | `Stopped` |

A command is a module named as the command (`python -m filters.run`): its `main(argv)` parses with
`OneLineParser` and returns `run_command(prog, work)`, which turns the errors above into their line on stderr
(`prog: error: ...`, `prog: stopped: ...`) and their exit status; any other exception is a bug and keeps its
traceback. A Hydra entry point does the same through `pipeline.stages.run_stages`. An error class names its
exit by deriving from one of the three (`ConfigError` is an `InputError`, `BudgetExhausted` is `Stopped`, ...).
"""

from __future__ import annotations

import argparse
import sys
from enum import IntEnum
from typing import Callable, ClassVar, NoReturn


class ExitCode(IntEnum):
    done = 0
    failed = 1
    bad_input = 2
    stopped = 3


class CommandError(Exception):
    """An error a command reports as one line with its exit status (the table above)."""

    exit_code: ClassVar[ExitCode] = ExitCode.failed
    label: ClassVar[str] = "error"


class Failed(CommandError):
    """It ran, and what it was to make failed or came out empty."""


class InputError(CommandError):
    """Bad input, found before any work: a config, an argument, a file, a run directory."""

    exit_code = ExitCode.bad_input


class Stopped(CommandError):
    """The run's spending cap stopped the work; what finished is kept."""

    exit_code = ExitCode.stopped
    label = "stopped"


def report(prog: str, error: CommandError) -> int:
    """Print `error` as its one line on stderr; its exit status."""
    print(f"{prog}: {error.label}: {error}", file=sys.stderr)
    return int(error.exit_code)


def main_prog(default: str) -> str:
    """How the running command was called (`python -m pipeline.synthesize`), for its error lines."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return f"python -m {spec.name}" if spec is not None else default


def run_command(prog: str, work: Callable[[], int]) -> int:
    """`work()`'s exit status, or the status and one line of the CommandError it raised."""
    try:
        return work()
    except CommandError as exc:
        return report(prog, exc)


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line on stderr, exit status 2 (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.bad_input, f"{self.prog}: error: {message}\n")
