"""One command convention (core/cli.py): one exit-code table, errors as one line, every command through it."""

from __future__ import annotations

import ast

import pytest

from agents.manuscript import ManuscriptUnreadable
from agents.research.documents import DocumentError
from agents.research.index import CorpusError
from core.cli import ExitCode, Failed, InputError, OneLineParser, Stopped, run_command
from core.codec import RecordError
from core.config import PROJECT_ROOT, ConfigError
from core.llm.local_server import LocalServerError
from core.llm.players import EndpointUnreachable
from core.records import ArtifactError
from core.run.ledger import BudgetExhausted
from core.run.reader import NotARun
from core.run.store import ConfigMismatch
from deck.fidelity import BadInput, CheckError
from eval.calibrate import LabelsError
from eval.slides import DeckUnreadable
from filters.run import RunIncomplete
from pipeline.stages import EmptyStage
from render.chromium import RenderError
from render.renderer import RenderTimeout

PRODUCT = ("core", "render", "deck", "agents", "critic", "filters", "pipeline", "train", "eval")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError, 2),
        (ConfigMismatch, 2),
        (NotARun, 2),
        (RunIncomplete, 2),
        (RecordError, 2),
        (ArtifactError, 2),
        (LocalServerError, 2),
        (DocumentError, 2),
        (CorpusError, 2),
        (ManuscriptUnreadable, 2),
        (DeckUnreadable, 2),
        (LabelsError, 2),
        (BadInput, 2),
        (RenderError, 1),
        (CheckError, 1),
        (EmptyStage, 1),
        (BudgetExhausted, 3),
    ],
)
def test_each_error_a_command_reports_has_its_exit_in_the_table(
    error: type[Exception], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    def work() -> int:
        raise error("what went wrong, naming the input")

    assert run_command("python -m some.command", work) == code
    (line,) = capsys.readouterr().err.splitlines()
    label = "stopped" if code == ExitCode.stopped else "error"
    assert line == f"python -m some.command: {label}: what went wrong, naming the input"


def test_a_slide_that_hangs_is_unusable_input(capsys: pytest.CaptureFixture[str]) -> None:
    def work() -> int:
        raise RenderTimeout(PROJECT_ROOT / "slide.html", 5)

    assert run_command("prog", work) == 2 and "did not finish rendering" in capsys.readouterr().err


def test_an_unreachable_endpoint_is_bad_input_and_still_a_model_error(capsys: pytest.CaptureFixture[str]) -> None:
    from core.llm.results import ModelError

    unreachable = EndpointUnreachable(ModelError("connection", "http://gpu:8000/v1 (role agent): refused", 3))
    assert isinstance(unreachable, ModelError) and unreachable.kind == "connection"

    def work() -> int:
        raise unreachable

    assert run_command("prog", work) == 2
    assert capsys.readouterr().err.startswith("prog: error: connection: http://gpu:8000/v1 (role agent): refused")


def test_a_bug_keeps_its_traceback() -> None:
    def work() -> int:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        run_command("prog", work)


def test_the_work_s_own_status_comes_back() -> None:
    assert run_command("prog", lambda: ExitCode.failed) == 1 and run_command("prog", lambda: 0) == 0
    assert issubclass(Failed, Exception) and issubclass(InputError, Exception) and issubclass(Stopped, Exception)


def test_bad_usage_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = OneLineParser(prog="python -m some.command")
    parser.add_argument("run_dir")
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args([])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "python -m some.command: error: the following arguments are required: run_dir"
    ]


def test_every_command_of_the_product_parses_with_the_one_line_parser() -> None:
    found = []
    for package in PRODUCT:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ArgumentParser"):
                    found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}")
    assert not found, f"a command builds its own ArgumentParser (use core.cli.OneLineParser): {found}"
