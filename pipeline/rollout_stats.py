"""Run figures of the rollouts stage: throughput, yield, cost, failures, critic findings (Figure 4)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

from core.failures import Failure, category_of
from core.records import Rollout, RolloutStatus
from core.run.context import RunContext
from core.run.store import atomic_write_text


def summarize(
    records: list[Rollout], tasks: int, played: int, elapsed_s: float, critic_mode: str, command_jail: str
) -> dict[str, Any]:
    done = [r for r in records if r.status == RolloutStatus.done]
    failures = Counter(r.failure or "unknown" for r in records if r.status != RolloutStatus.done)
    tokens: Counter = Counter()
    for r in records:
        by_role = r.tokens_by_role()
        tokens.update({f"{role}/prompt": u.prompt_tokens for role, u in by_role.items()})
        tokens.update({f"{role}/completion": u.completion_tokens for role, u in by_role.items()})
    cost = sum(r.cost_usd for r in records)
    return {
        "tasks": tasks,
        "finished": len(records),
        "played": played,
        "done": len(done),
        "failed": len(records) - len(done),
        "yield": round(len(done) / tasks, 4) if tasks else 0.0,
        "rollouts_per_hour": round(3600 * played / elapsed_s, 1) if played and elapsed_s else 0.0,
        "cost_usd": round(cost, 4),
        "cost_per_done_usd": round(cost / len(done), 4) if done else 0.0,
        "wall_s_mean": round(mean(r.wall_s for r in records), 1) if records else 0.0,
        "injections": sum(r.injections for r in records),
        "critic_mode": critic_mode,
        "command_jail": command_jail,  # what execute_command ran in (agents.jail.describe)
        "findings_by_category": dict(sum((Counter(r.findings) for r in records), Counter())),
        "failures_by_category": dict(failures.most_common()),
        "failures_by_kind": dict(Counter(f.split("/")[0] for f in failures.elements())),
        "tool_crashes": dict(Counter(f.partition(":")[2] for f in failures.elements() if category_of(f) is Failure.tool_crash)),
        "tokens": dict(tokens),
        "steps_mean": {agent: round(mean(r.steps[agent] for r in records if agent in r.steps), 1) for agent in _agents(records)},
        "tool_counts": dict(sum((Counter(r.tool_counts) for r in records), Counter()).most_common()),
    }


def _agents(records: list[Rollout]) -> list[str]:
    return sorted({a for r in records for a in r.steps})


def publish(ctx: RunContext, stats: dict[str, Any], records: list[Rollout]) -> Path:
    """Write the figures to <run>/stats/rollouts.json and to the tracker."""
    path = ctx.store.path("stats", "rollouts.json")
    path.parent.mkdir(exist_ok=True)
    atomic_write_text(path, json.dumps(stats, indent=1, ensure_ascii=False))
    scalars = {f"rollouts/{k}": v for k, v in stats.items() if isinstance(v, (int, float))}
    scalars |= {f"rollouts/findings/{k}": v for k, v in stats["findings_by_category"].items()}
    scalars |= {f"rollouts/failures/{k}": v for k, v in stats["failures_by_kind"].items()}
    ctx.tracker.log(scalars)  # the rollouts table with slide thumbnails is logged by the report stage
    return path
