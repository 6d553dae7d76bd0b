"""`python -m pipeline.provenance RUN_DIR [--all] [--json]`: which prompt templates and models made the accepted samples.

A sample is one agent trajectory of an accepted rollout (filters.acceptance), as the export
writes them; its origin is its trajectory's, its task's and its verdicts' (core.provenance).
Prints, per template version (id and content hash) and per role's model and sampling, how many
of the samples it helped make. `--all` counts every finished rollout instead (before the
filters have run, nothing is accepted). Exit 2 with one line when RUN_DIR is not a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import orjson

from core.provenance import Breakdown, breakdown, table
from core.records import Origin, RecordError, Rollout, RolloutStatus, Task, Verdict, decode, read_parquet
from core.store import RunStore
from filters.acceptance import outcomes, run_gates
from pipeline.report.data import NotARun, check_run, stage_records

TRAJECTORY = "trajectory:"


def trajectory_origin(path: Path) -> Origin:
    """The `origin` of a trajectory file (a file made before records named theirs: none)."""
    try:
        data = orjson.loads(path.read_bytes())
        return decode(Origin, data.get("origin") or {})
    except (OSError, orjson.JSONDecodeError, RecordError) as exc:
        raise RecordError(f"{path}: unreadable trajectory ({exc})") from exc


def sample_origins(root: Path, every_finished: bool = False) -> tuple[list[Origin], int, str]:
    """One origin per sample of the accepted (or every finished) rollouts; how many rollouts; which rule chose them."""
    store = RunStore(root)
    tasks = {t.task_id: t for split in sorted((root / "tasks").glob("*.parquet")) for t in read_parquet(split, Task)}
    rollouts = stage_records(store, "rollouts", "rollouts.parquet", Rollout)
    verdicts = stage_records(store, "verdicts", "verdicts.parquet", Verdict)
    gates = run_gates(root)
    if every_finished:
        chosen, rule = [r for r in rollouts if r.status == RolloutStatus.done], "every finished rollout (--all)"
    else:
        accepted = {o.task_id for o in outcomes(rollouts, verdicts, gates) if o.accepted}
        chosen, rule = [r for r in rollouts if r.task_id in accepted], f"accepted by the gates: {', '.join(gates) or 'none'}"
        if not verdicts and gates:
            rule += " (the filters have not run: nothing is accepted yet; --all counts every finished rollout)"
    judged: dict[str, Origin] = defaultdict(Origin)
    for v in verdicts:
        judged[v.task_id] |= v.origin
    origins = []
    for rollout in chosen:
        around = (tasks[rollout.task_id].origin if rollout.task_id in tasks else Origin()) | judged[rollout.task_id]
        for name, path in sorted(rollout.artifacts.items()):
            if name.startswith(TRAJECTORY):
                origins.append(trajectory_origin(root / path) | around)
    return origins, len(chosen), rule


def report(root: Path, found: Breakdown, rollouts: int, rule: str) -> str:
    head = f"{root}: {found.samples} samples (one per agent trajectory) of {rollouts} rollouts, {rule}"
    return f"{head}\n\n{table(found)}\n" if found.samples else f"{head}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.provenance", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--all", action="store_true", help="every finished rollout, not only the accepted ones")
    parser.add_argument("--json", action="store_true", help="the breakdown as JSON")
    args = parser.parse_args(argv)
    root = args.run_dir.resolve()
    try:
        check_run(root)
        origins, rollouts, rule = sample_origins(root, args.all)
    except (NotARun, RecordError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    found = breakdown(origins)
    if args.json:
        print(json.dumps({"run": str(root), "rollouts": rollouts, "rule": rule} | found.to_json(), indent=1, ensure_ascii=False))
    else:
        print(report(root, found, rollouts, rule), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
