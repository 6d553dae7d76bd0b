"""What a run spent, on disk: `stats/usage.json` and the rollouts stage's projected cost.

`stats/usage.json` is the ledger (core.run.ledger: every finished unit's model calls by stage and
role, and what attempts that left no unit spent) with what it bought: cost and tokens per accepted
rollout (filters.acceptance) and per million SFT tokens (the export's count). `pipeline.stages`
rewrites it after every stage; the report and the dataset card read the ledger themselves.
`stats/projection.json` is written before the rollouts stage plays anything, and again after a stage
that left rollouts to play (a `limit=N` pilot): the mean cost of the rollouts finished so far times
the rollouts of a run without `limit`, so a pilot tells the price of the full run.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Optional

from core.run.ledger import Ledger, SpendingCap, read_ledger
from core.run.reader import RunReader
from core.run.store import atomic_write_text
from core.run.tracking import Tracker
from filters.acceptance import judged

log = logging.getLogger(__name__)

USAGE = ("stats", "usage.json")
PROJECTION = ("stats", "projection.json")
EXPORT = ("stats", "export.json")


def _ratio(numerator: Optional[float], denominator: Optional[float]) -> Optional[float]:
    return numerator / denominator if numerator is not None and denominator else None


def accepted_rollouts(run: RunReader) -> Optional[int]:
    """Rollouts filters.acceptance accepts; None before the filters have run."""
    return sum(o.accepted for _, o in judged(run)) if run.filtered() else None


def sft_tokens(root: Path) -> Optional[int]:
    """Tokens of the exported SFT samples (the export stage's stats/export.json); None before an export."""
    path = root.joinpath(*EXPORT)
    return json.loads(path.read_text(encoding="utf-8")).get("tokens") if path.is_file() else None


def usage_stats(root: Path) -> dict[str, Any]:
    """stats/usage.json of the run at `root`, as it stands."""
    run = RunReader(root)
    return spending(run.ledger(), accepted_rollouts(run), sft_tokens(root))


def spending(ledger: Ledger, accepted: Optional[int], tokens: Optional[int]) -> dict[str, Any]:
    """The ledger with what it bought: `accepted` rollouts (None: not filtered yet), `tokens` of SFT data (None: no export)."""
    total = ledger.total()
    return ledger.to_json() | {
        "outputs": {
            "accepted_rollouts": accepted,
            "cost_per_accepted_usd": _ratio(total.cost, accepted),
            "tokens_per_accepted": _ratio(total.tokens, accepted),
            "sft_tokens": tokens,
            "cost_per_mtok_sft_usd": _ratio(None if total.cost is None else total.cost * 1e6, tokens),
        }
    }


def publish_usage(root: Path, tracker: Optional[Tracker] = None) -> dict[str, Any]:
    """Write stats/usage.json (and its scalars to the tracker)."""
    stats = usage_stats(root)
    path = root.joinpath(*USAGE)
    path.parent.mkdir(exist_ok=True)
    atomic_write_text(path, json.dumps(stats, indent=1, ensure_ascii=False))
    if tracker is not None:
        scalars = {
            f"usage/{stage}/{role}/{k}": v
            for stage, d in stats["stages"].items()
            for role, u in d["roles"].items()
            for k, v in u.items()
            if isinstance(v, (int, float))
        }
        scalars |= {f"usage/total/{k}": v for k, v in stats["total"].items() if isinstance(v, (int, float))}
        tracker.summary(scalars)
    return stats


def project_rollouts(root: Path, stage: str, tasks: int, cap: Optional[SpendingCap]) -> Optional[dict[str, Any]]:
    """The cost of the stage's `tasks` rollouts (as many as a run without `limit` plays) at the mean of those
    finished so far; logged and written to stats/projection.json while some are left to play (else None)."""
    ledger = read_ledger(root)
    finished = ledger.units.get(stage, 0)
    to_play = tasks - finished
    if to_play <= 0:
        return None
    spent = ledger.stages.get(stage, {})
    cost = sum(u.cost_usd for u in spent.values()) if not any(u.unpriced_calls for u in spent.values()) else None
    tokens = sum(u.tokens for u in spent.values())
    per_cost, per_tokens = _ratio(cost, finished), _ratio(tokens, finished)
    projection: dict[str, Any] = {
        "stage": stage,
        "tasks": tasks,
        "finished": finished,
        "to_play": to_play,
        "at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "per_rollout_cost_usd": per_cost,
        "per_rollout_tokens": per_tokens,
        "projected_cost_usd": None if per_cost is None or cost is None else cost + per_cost * to_play,
        "projected_tokens": None if per_tokens is None else round(tokens + per_tokens * to_play),
        "run_spent_usd": ledger.total().cost,
    }
    if not finished:
        note = "no rollout has finished yet: a limit=N pilot projects the cost of the full stage when it ends"
    elif per_cost is None:
        note = f"{finished} rollouts finished, a role's price is unknown (set llm.price.*): tokens only"
    else:
        note = (
            f"${per_cost:.4f} and {per_tokens:,.0f} tokens per rollout over {finished} finished: "
            f"${projection['projected_cost_usd']:.2f} for the stage's {tasks} rollouts without limit, ${per_cost * to_play:.2f} of it "
            "still to spend"
        )
        if cap is not None and cap.max_cost_usd is not None and per_cost > 0:
            left = max(0.0, cap.max_cost_usd - cap.spent()[0])
            note += f"; run.max_cost_usd leaves ${left:.2f}, about {int(left // per_cost)} rollouts"
    projection["note"] = note
    log.info("%s: projected cost: %s", stage, note)
    path = root.joinpath(*PROJECTION)
    path.parent.mkdir(exist_ok=True)
    atomic_write_text(path, json.dumps(projection, indent=1))
    return projection
