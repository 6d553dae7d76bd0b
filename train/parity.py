"""Does every sample train each turn on what the teacher was shown? Token by token, with MS-SWIFT's template.

    python -m train.parity runs/my-run                 # a table; exit 1 when a turn differs
    python -m train.parity runs/my-run --json          # one JSON object
    python -m train.parity runs/my-run --profile openai --model-dir DIR
    python -m train.parity runs/my-run --all           # every trajectory, accepted or not

For every sample the export makes of the run (`train.export`'s own selection) and every
trained turn k of the teacher's: (a) the sample cut after turn k, and (b) the request the
client sent for turn k (`core.llm.wire.to_wire` over the records before it, the code the client
runs), read the way MS-SWIFT reads an OpenAI request (its own converter: `tool_calls`,
`image_url` parts), plus turn k, are both encoded by the `glm4_5v` template in training
mode, and their token ids compared. The only rule added to MS-SWIFT's reading is the GLM
template's: a message's `reasoning_content` renders inline as `<think>...</think>`. A
difference that is intended is counted by name (`NAMED_DIFFERENCES`, docs/profiles.md).
Token ids come from the project's GLM-shaped tokenizer (scripts/make_tiny_model.py, built
once into runs/.glm-tokenizer) unless `--model-dir` names real processor files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from core.cli import ExitCode, InputError, OneLineParser, run_command
from core.config import PROJECT_ROOT
from core.llm.conversation import PROFILES, PastReasoning
from core.llm.wire import digest, to_wire
from core.records import Trajectory
from core.run.reader import RunReader
from train.config import ExportConfig, HistoryReasoning
from train.samples import Sample, SwiftMessage, assistant_text, defuse_tags, profile_of
from train.tokens import TemplateCounter, has_processor

NAMED_DIFFERENCES = {
    "defused_tags": "literal MS-SWIFT media tags in text (`<image>`, `<video>`...) read `<image >` in the sample, "
    "so that MS-SWIFT never takes them for media",
    "history_reasoning": "export.history_reasoning=keep: past turns' reasoning stays in the context where the template "
    "hid it from the teacher (one sample per trajectory instead of parts)",
}
DEFAULT_TOKENIZER_DIR = PROJECT_ROOT / "runs" / ".glm-tokenizer"
SHOWN_DIFFERENCES = 5  # the first differences kept in the report


@dataclass
class ParityReport:
    tokenizer: str = ""
    samples: int = 0
    turns_checked: int = 0
    turns_equal: int = 0
    turns_named_difference: Counter[str] = field(default_factory=Counter)
    differences: list[dict[str, Any]] = field(default_factory=list)  # the first few turns that differ
    turns_different: int = 0
    requests_verified: int = 0  # turns whose rebuilt request has the digest recorded when it was sent

    @property
    def ok(self) -> bool:
        return self.turns_different == 0

    def add(self, outcome: str, where: dict[str, Any]) -> None:
        self.turns_checked += 1
        if outcome == "equal":
            self.turns_equal += 1
        elif outcome in NAMED_DIFFERENCES:
            self.turns_named_difference[outcome] += 1
        else:
            self.turns_different += 1
            if len(self.differences) < SHOWN_DIFFERENCES:
                self.differences.append(where | {"difference": outcome})

    def merge(self, other: ParityReport) -> None:
        """Add another report's figures (a part of the run checked elsewhere) to this one."""
        self.tokenizer = self.tokenizer or other.tokenizer
        self.samples += other.samples
        self.turns_checked += other.turns_checked
        self.turns_equal += other.turns_equal
        self.turns_named_difference.update(other.turns_named_difference)
        self.turns_different += other.turns_different
        self.requests_verified += other.requests_verified
        self.differences += other.differences[: SHOWN_DIFFERENCES - len(self.differences)]

    def to_json(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "turns_checked": self.turns_checked,
            "turns_equal": self.turns_equal,
            "turns_named_difference": dict(self.turns_named_difference),
            "turns_different": self.turns_different,
            "requests_verified": self.requests_verified,
            "differences": self.differences,
            "tokenizer": self.tokenizer,
            "ok": self.ok,
        }

    def summary(self) -> str:
        named = ", ".join(f"{n} {name}" for name, n in sorted(self.turns_named_difference.items())) or "none"
        lines = [
            f"parity ({self.tokenizer}): {self.samples} samples, {self.turns_checked} turns checked, "
            f"{self.turns_equal} equal, named differences: {named}, {self.turns_different} different; "
            f"{self.requests_verified} rebuilt requests match the digest recorded when they were sent"
        ]
        lines += [f"DIFFERENT: {json.dumps(d, ensure_ascii=False)}" for d in self.differences]
        return "\n".join(lines)


# ---------------------------------------------------------------- the two rows


def _read_request_message(message: dict[str, Any], defuse: bool) -> dict[str, Any]:
    """One request message as MS-SWIFT reads it, with the GLM template's reasoning rule (and defused tags)."""
    text = defuse_tags if defuse else str
    out = {k: v for k, v in message.items() if k != "reasoning_content"}
    content = message.get("content")
    if message["role"] == "assistant":
        out["content"] = text(assistant_text(content or "", message.get("reasoning_content")))
    elif isinstance(content, list):
        out["content"] = [p | {"text": text(p["text"])} if p.get("type") == "text" else p for p in content]
    elif isinstance(content, str):
        out["content"] = text(content)
    if message.get("tool_calls"):
        out["tool_calls"] = [
            c | {"function": c["function"] | {"arguments": text(c["function"]["arguments"])}} for c in message["tool_calls"]
        ]
    return out


def request_row(request: list[dict[str, Any]], tools_json: str, turn: list[SwiftMessage], defuse: bool) -> dict[str, Any]:
    """The request the teacher answered (OpenAI format, for MS-SWIFT's converter) followed by the turn it wrote."""
    return {"tools": tools_json, "messages": [_read_request_message(m, defuse) for m in request] + [m.to_dict() for m in turn]}


def _ids(encode: Callable[[dict[str, Any]], dict[str, Any]], row: dict[str, Any]) -> list[int]:
    return list(encode(row)["input_ids"])


def _first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


# ---------------------------------------------------------------- per sample


def teacher_turns(sample: Sample) -> list[tuple[int, int, int]]:
    """(record index, first message, message count after it) of each trained turn the teacher wrote."""
    turns, i = [], 0
    while i < len(sample.messages):
        m = sample.messages[i]
        if m.role in ("assistant", "tool_call"):
            j = i
            while j < len(sample.messages) and sample.messages[j].role in ("assistant", "tool_call"):
                j += 1
            if m.loss is not False and not m.critic and m.source is not None:
                turns.append((m.source, i, j))
            i = j
        else:
            i += 1
    return turns


def check_sample(
    sample: Sample,
    trajectory: Trajectory,
    workspace: Path,
    profile: str,
    encode: Callable[[dict[str, Any]], dict[str, Any]],
    report: ParityReport,
    keep_reasoning: bool = False,
) -> None:
    followed = profile_of(trajectory, profile)
    report.samples += 1
    for source, start, end in teacher_turns(sample):
        request = to_wire(trajectory.messages[:source], workspace, followed, trajectory.vision)
        where = {"task_id": sample.task_id, "agent": sample.agent, "part": sample.part, "message": source}
        sent = trajectory.messages[source].sent
        if sent is not None and digest(request) != sent:
            report.add("the request rebuilt from the records is not the one sent (its digest differs)", where)
            continue
        report.requests_verified += sent is not None
        target = list(sample.messages[start:end])
        ours = _ids(encode, sample.prefix(end).to_swift())
        read = request_row(request, sample.tools_json, target, defuse=True)
        theirs = _ids(encode, read)
        if theirs == ours:
            defused = read != request_row(request, sample.tools_json, target, defuse=False)
            report.add("defused_tags" if defused else "equal", where)
            continue
        if keep_reasoning:  # the request with every past turn's reasoning: the view such a sample holds
            every = replace(followed, past_reasoning=PastReasoning.every)
            kept = to_wire(trajectory.messages[:source], workspace, every, trajectory.vision)
            if _ids(encode, request_row(kept, sample.tools_json, target, defuse=True)) == ours:
                report.add("history_reasoning", where)
                continue
        at = _first_difference(ours, theirs)
        report.add(f"token {at} of {len(ours)} (sample) vs {len(theirs)} (request)", where)


# ---------------------------------------------------------------- the run


def tokenizer_dir(model_dir: Optional[Path]) -> Path:
    """Processor files to encode with: `model_dir`, else the project's GLM-shaped tokenizer (built once)."""
    if model_dir is not None:
        return model_dir
    if not (DEFAULT_TOKENIZER_DIR / "tokenizer.json").is_file():
        script = PROJECT_ROOT / "scripts" / "make_tiny_model.py"
        subprocess.run(
            [sys.executable, str(script), str(DEFAULT_TOKENIZER_DIR), "--processor-only"], check=True, capture_output=True
        )
    return DEFAULT_TOKENIZER_DIR


class Parity:
    """The export's check of each sample, with one tokenizer for the run."""

    def __init__(self, cfg: ExportConfig):
        model_dir = Path(cfg.model_dir) if has_processor(cfg.model_dir) else None
        self.counter = TemplateCounter(tokenizer_dir(model_dir), cfg.template, cfg.agent_template)
        self.report = ParityReport(tokenizer=self.counter.method)
        self.profile = cfg.profile
        self.keep_reasoning = HistoryReasoning(cfg.history_reasoning) is HistoryReasoning.keep

    def difference(self, sample: Sample, trajectory: Trajectory, workspace: Path) -> Optional[str]:
        """None when every turn of the sample is equal (or differs by a named difference), else the first difference."""
        before = self.report.turns_different
        shown = len(self.report.differences)
        check_sample(sample, trajectory, workspace, self.profile, self.counter.encode, self.report, self.keep_reasoning)
        if self.report.turns_different == before:
            return None
        found = self.report.differences[shown:]
        return json.dumps(found[0], ensure_ascii=False) if found else f"{self.report.turns_different - before} turn(s) differ"


def check_run(
    run: RunReader,
    profile: Optional[str] = None,
    model_dir: Optional[Path] = None,
    every_trajectory: bool = False,
    history_reasoning: HistoryReasoning = HistoryReasoning.exact,
) -> ParityReport:
    from train.export import parity_inputs  # train.export checks each sample with this module's Parity

    cfg = ExportConfig(model_dir=str(model_dir) if model_dir else None, history_reasoning=history_reasoning)
    if profile:
        cfg.profile = profile
    parity = Parity(cfg)
    if next(run.iter_rollouts(), None) is None:
        raise InputError(f"{run.root}: not a run directory with rollouts (no rollouts.parquet, no units/rollouts/)")
    for source in parity_inputs(run, cfg, every_trajectory):
        parity.difference(source.sample, source.trajectory, source.workspace)
    return parity.report


def main(argv: Optional[list[str]] = None) -> int:
    parser = OneLineParser(
        prog="python -m train.parity", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument(
        "--profile", choices=list(PROFILES), help="the profile of trajectories that record none (default: export.profile)"
    )
    parser.add_argument("--model-dir", type=Path, help="processor files to encode with (default: the GLM-shaped tokenizer)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--all", action="store_true", help="every trajectory of every rollout, accepted or not (what the models were sent)"
    )
    parser.add_argument(
        "--history-reasoning",
        choices=[m.value for m in HistoryReasoning],
        default=HistoryReasoning.exact.value,
        help="how the export was made (train.export --history-reasoning)",
    )
    args = parser.parse_args(argv)

    def work() -> int:
        report = check_run(
            RunReader.open(args.run_dir), args.profile, args.model_dir, args.all, HistoryReasoning(args.history_reasoning)
        )
        print(json.dumps(report.to_json(), ensure_ascii=False) if args.json else report.summary())
        return ExitCode.done if report.ok else ExitCode.failed

    return run_command(parser.prog, work)


if __name__ == "__main__":
    sys.exit(main())
