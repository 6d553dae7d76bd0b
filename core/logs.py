"""Logging set-up for entry points: rich console output plus a log file in the run directory."""

from __future__ import annotations

import logging
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler

console = Console(stderr=True)


def setup_logging(log_file: Path | None = None, level: int = logging.INFO) -> None:
    handlers: list[logging.Handler] = [RichHandler(console=console, show_path=False, rich_tracebacks=True)]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(log_file, encoding="utf-8")
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handlers.append(file_handler)
    logging.basicConfig(level=level, format="%(message)s", handlers=handlers, force=True)
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "urllib3", "filelock", "asyncio", "datasets"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
