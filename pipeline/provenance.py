"""`python -m pipeline.provenance RUN_DIR [--all] [--json]`: which prompt templates and models made the accepted samples.

A sample is one agent trajectory of an accepted rollout (filters.acceptance), as the export
writes them; its origin is its trajectory's, its task's and its verdicts' (core.run.provenance).
Prints, per template version (id and content hash) and per role's model and sampling, how many
of the samples it helped make. `--all` counts every finished rollout instead (before the
filters have run, nothing is accepted). Exit 2 with one line when RUN_DIR is not a run.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from core.cli import OneLineParser, run_command
from core.records import Origin, RolloutStatus
from core.run.provenance import Breakdown, breakdown, table
from core.run.reader import RunReader
from filters.acceptance import judged, run_gates


def sample_origins(run: RunReader, every_finished: bool = False) -> tuple[list[Origin], int, str]:
    """One origin per sample of the accepted (or every finished) rollouts; how many rollouts; which rule chose them."""
    rollouts, verdicts, gates = run.rollouts(), run.verdicts() or [], run_gates(run)
    if every_finished:
        chosen, rule = [r for r in rollouts if r.status == RolloutStatus.done], "every finished rollout (--all)"
    else:
        accepted = {o.task_id for _, o in judged(run) if o.accepted}
        chosen, rule = [r for r in rollouts if r.task_id in accepted], f"accepted by the gates: {', '.join(gates) or 'none'}"
        if not verdicts and gates:
            rule += " (the filters have not run: nothing is accepted yet; --all counts every finished rollout)"
    by_task: dict[str, Origin] = defaultdict(Origin)
    for v in verdicts:
        by_task[v.task_id] |= v.origin
    tasks = run.tasks_of(r.task_id for r in chosen)
    origins = []
    for rollout in chosen:
        around = (tasks[rollout.task_id].origin if rollout.task_id in tasks else Origin()) | by_task[rollout.task_id]
        origins += [run.trajectory_origin(f) | around for f in run.trajectory_files(rollout)]
    return origins, len(chosen), rule


def report(root: Path, found: Breakdown, rollouts: int, rule: str) -> str:
    head = f"{root}: {found.samples} samples (one per agent trajectory) of {rollouts} rollouts, {rule}"
    return f"{head}\n\n{table(found)}\n" if found.samples else f"{head}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m pipeline.provenance", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--all", action="store_true", help="every finished rollout, not only the accepted ones")
    parser.add_argument("--json", action="store_true", help="the breakdown as JSON")
    args = parser.parse_args(argv)

    def work() -> int:
        run = RunReader.open(args.run_dir)
        origins, rollouts, rule = sample_origins(run, args.all)
        found = breakdown(origins)
        if args.json:
            print(
                json.dumps(
                    {"run": str(run.root), "rollouts": rollouts, "rule": rule} | found.to_json(), indent=1, ensure_ascii=False
                )
            )
        else:
            print(report(run.root, found, rollouts, rule), end="")
        return 0

    return run_command(parser.prog, work)


if __name__ == "__main__":
    sys.exit(main())
