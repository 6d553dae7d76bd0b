"""The constraint gate: does an exported deck PDF meet its task's verifiable constraints?

    python -m filters.constraints deck.pdf --slides 8 --lang zh --aspect 16:9 --json

Slide count is the page count (an exact number or a range). The aspect ratio is read
from every page's size and every page must agree; A1-A4 all stand for the ISO 216
portrait shape 1:sqrt 2, so an A1 poster task accepts A2-A4 pages and the reverse.
The language is that of the deck's extracted text, decided by `core.language`
(dominant script first). Score = the fraction of the task's constraints met; free
constraints (None) do not count. A PDF that cannot be read is an environment
failure (`UnusablePDF`), never a crash.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from core.cli import OneLineParser, run_command
from core.language import detect_language
from core.pdf import pymupdf
from core.records import ArtifactError, Constraints, Verdict
from core.seams.candidate import Candidate
from filters.config import FiltersConfig
from filters.gates import GateSpec, environment_verdict

GATE = "constraint"
T = TypeVar("T")
R = TypeVar("R")
ASPECTS: dict[str, float] = {"16:9": 16 / 9, "4:3": 4 / 3, **{f"A{n}": 1 / math.sqrt(2) for n in range(1, 5)}}  # w / h
_A0_AREA_PT2 = 2383.9 * 3370.4  # one square metre


class UnusablePDF(ArtifactError):
    """The deck PDF is missing or cannot be read: an environment failure."""

    def to_verdict(self, task_id: str) -> Verdict:
        return environment_verdict(task_id, GATE, str(self))


@dataclass(frozen=True)
class ConstraintCheck:
    ok: bool
    expected: int | str
    actual: int | str


@dataclass(frozen=True)
class ConstraintReport:
    pages: int
    checks: dict[str, ConstraintCheck]  # slide_count | aspect_ratio | language, only those constrained
    score: float  # fraction of checks that are ok; 1.0 with none
    min_score: float

    @property
    def passed(self) -> bool:
        return self.score >= self.min_score

    def reasons(self) -> tuple[str, ...]:
        return tuple(
            f"{name.replace('_', ' ')}: expected {c.expected}, got {c.actual}" for name, c in self.checks.items() if not c.ok
        )

    def to_verdict(self, task_id: str) -> Verdict:
        return Verdict(
            task_id=task_id,
            gate=GATE,
            passed=self.passed,
            category=None if self.passed else GATE,
            score=self.score,
            reasons=self.reasons(),
        )

    def to_json(self) -> dict[str, object]:
        checks = {name: {"ok": c.ok, "expected": c.expected, "actual": c.actual} for name, c in self.checks.items()}
        return {"checks": checks, "score": self.score}


@dataclass(frozen=True)
class _Deck:
    sizes: list[tuple[float, float]]  # (width, height) in pt, one per page
    text: str


def check_deck(pdf_path: Path, constraints: Constraints, cfg: FiltersConfig) -> ConstraintReport:
    """Check `pdf_path` against `constraints`; raises UnusablePDF if it cannot be read."""
    deck = _read(pdf_path)
    checks: dict[str, ConstraintCheck] = {}
    if constraints.slides_min is not None or constraints.slides_max is not None:
        checks["slide_count"] = _slide_count(len(deck.sizes), constraints.slides_min, constraints.slides_max)
    if constraints.aspect_ratio is not None:
        checks["aspect_ratio"] = _aspect(deck.sizes, constraints.aspect_ratio, cfg.aspect_tolerance)
    if constraints.language is not None:
        checks["language"] = _language(deck.text, constraints.language, cfg.language_threshold)
    score = sum(c.ok for c in checks.values()) / len(checks) if checks else 1.0
    return ConstraintReport(pages=len(deck.sizes), checks=checks, score=score, min_score=cfg.min_constraint_score)


def read_pdf(pdf_path: Path, read: Callable[[pymupdf.Document], T]) -> T:
    """`read(doc)` of a deck PDF that has pages; raises UnusablePDF naming the file when it cannot be read."""
    if not pdf_path.is_file():
        raise UnusablePDF(f"{pdf_path}: {'not a file' if pdf_path.exists() else 'no such file'}")
    try:
        with pymupdf.open(pdf_path, filetype="pdf") as doc:
            if not doc.is_pdf:  # pymupdf opens other formats (text, images) despite filetype="pdf"
                raise UnusablePDF(f"{pdf_path}: not a PDF (read as {(doc.metadata or {}).get('format') or 'another format'})")
            if doc.needs_pass:
                raise UnusablePDF(f"{pdf_path}: encrypted (needs a password)")
            if doc.page_count == 0:
                raise UnusablePDF(f"{pdf_path}: the PDF has no pages")
            return read(doc)
    except (RuntimeError, ValueError) as exc:  # pymupdf's FileDataError and mupdf errors are RuntimeErrors
        raise UnusablePDF(f"{pdf_path}: not a readable PDF ({exc})") from exc


def _read(pdf_path: Path) -> _Deck:
    return read_pdf(
        pdf_path,
        lambda doc: _Deck([(p.rect.width, p.rect.height) for p in doc.pages()], "\n".join(p.get_text() for p in doc.pages())),
    )


def _slide_count(pages: int, low: int | None, high: int | None) -> ConstraintCheck:
    if low is not None and low == high:
        expected: int | str = low
    elif high is None:
        expected = f">={low}"
    elif low is None:
        expected = f"<={high}"
    else:
        expected = f"{low}-{high}"
    ok = (low is None or pages >= low) and (high is None or pages <= high)
    return ConstraintCheck(ok, expected, pages)


def _aspect(sizes: list[tuple[float, float]], expected: str, tolerance: float) -> ConstraintCheck:
    if expected not in ASPECTS:
        raise ValueError(f"unknown aspect ratio {expected!r}; known: {', '.join(ASPECTS)}")
    target = ASPECTS[expected]
    ok = all(abs(w / h - target) / target <= tolerance for w, h in sizes)
    groups: dict[str, list[int]] = {}
    for number, (w, h) in enumerate(sizes, start=1):
        groups.setdefault(_describe(w, h, tolerance), []).append(number)
    if len(groups) == 1:
        return ConstraintCheck(ok, expected, next(iter(groups)))
    actual = "; ".join(f"{desc} on {_page_list(numbers)}" for desc, numbers in groups.items())
    return ConstraintCheck(ok, expected, f"mixed: {actual}")


def _describe(width: float, height: float, tolerance: float) -> str:
    size = f"{round(width, 1):g}x{round(height, 1):g} pt"
    for name, ratio in ASPECTS.items():
        if abs(width / height - ratio) / ratio <= tolerance:
            if name.startswith("A"):  # name the ISO size the page has
                name = f"A{max(0, round(math.log2(_A0_AREA_PT2 / (width * height))))}"
            return f"{name} ({size})"
    return size


def _page_list(numbers: list[int]) -> str:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    spans = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return f"page {spans}" if len(numbers) == 1 else f"pages {spans}"


def _language(text: str, expected: str, threshold: float) -> ConstraintCheck:
    guess = detect_language(text, threshold)
    wanted = expected.split("-")[0].lower()
    return ConstraintCheck(guess.lang == wanted, expected, guess.lang)


# ---------------------------------------------------------------- the gate


class ConstraintGate:
    name = GATE

    def __init__(self, cfg: FiltersConfig):
        self.cfg = cfg

    async def judge(self, candidate: Candidate) -> Verdict:
        pdf = candidate.path("pdf")
        report = await asyncio.to_thread(check_deck, pdf, candidate.task.constraints, self.cfg)
        return report.to_verdict(candidate.task.task_id)


SPEC = GateSpec(GATE, ConstraintGate)


# ---------------------------------------------------------------- CLI


def print_report(
    prog: str, make: Callable[[], R], to_json: Callable[[R], object], human: Callable[[R], str], as_json: bool
) -> int:
    """A gate CLI's output: the report as JSON or as lines (exit 0), or one line on stderr (exit 2) for an unreadable
    input (an ArtifactError: the PDF, or what else the gate reads)."""

    def work() -> int:
        report = make()
        print(json.dumps(to_json(report), ensure_ascii=False) if as_json else human(report))
        return 0

    return run_command(prog, work)


def _slides(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"wants a positive whole number, got {value!r}")
    return int(value)


def _slides_range(value: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)-(\d+)", value)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise argparse.ArgumentTypeError(f"wants A-B with 1 <= A <= B, got {value!r}")
    return int(match[1]), int(match[2])


def _aspect_name(value: str) -> str:
    name = value.upper()
    if name not in ASPECTS:
        raise argparse.ArgumentTypeError(f"wants one of {', '.join(ASPECTS)}, got {value!r}")
    return name


def _lang(value: str) -> str:
    if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)*", value):
        raise argparse.ArgumentTypeError(f"wants an ISO 639-1 code such as en or zh, got {value!r}")
    return value


def _parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m filters.constraints", description=__doc__.split("\n\n")[0])
    parser.add_argument("pdf", type=Path, help="the exported deck PDF")
    count = parser.add_mutually_exclusive_group()
    count.add_argument("--slides", type=_slides, metavar="N", help="exact slide count")
    count.add_argument("--slides-range", type=_slides_range, metavar="A-B", help="slide count range, inclusive")
    parser.add_argument("--lang", type=_lang, help="expected language (ISO 639-1)")
    parser.add_argument("--aspect", type=_aspect_name, help="expected aspect ratio: 16:9, 4:3 or A1-A4 (portrait poster)")
    parser.add_argument("--json", action="store_true", help="print the checks and score as JSON")
    return parser


def _human(pdf: Path, report: ConstraintReport) -> str:
    met = sum(c.ok for c in report.checks.values())
    lines = [f"{pdf}: {report.pages} pages, score {report.score:.2f} ({met} of {len(report.checks)} checks met)"]
    for name, c in report.checks.items():
        lines.append(f"  {'ok  ' if c.ok else 'FAIL'}  {name.replace('_', ' '):<12}  expected {c.expected}, got {c.actual}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    low, high = (args.slides, args.slides) if args.slides_range is None else args.slides_range
    constraints = Constraints(slides_min=low, slides_max=high, aspect_ratio=args.aspect, language=args.lang)
    return print_report(
        parser.prog,
        lambda: check_deck(args.pdf, constraints, FiltersConfig()),
        ConstraintReport.to_json,
        lambda report: _human(args.pdf, report),
        args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
