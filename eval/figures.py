"""Figure 6: average score against generation cost per deck, with the Pareto frontier."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from eval.summary import RunSummary


def pareto_frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the (cost, score) points no other point beats (cost as low or lower and score as high or
    higher, one strictly), in order of rising cost; of identical points the first is kept."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1], i))
    frontier: list[int] = []
    for i in order:
        if not frontier or points[i][1] > points[frontier[-1]][1]:
            frontier.append(i)
    return frontier


def cost_vs_score(runs: Sequence[RunSummary], path: Path) -> Path:
    """Scatter of Avg. against cost per deck, one colour per framework, the frontier as a step line."""
    scored = [(r, r.avg) for r in runs if r.avg is not None]  # each scored run with its Avg.
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    frameworks = list(dict.fromkeys(r.framework for r, _ in scored))
    colours = {f: f"C{i}" for i, f in enumerate(frameworks)}
    for framework in frameworks:
        mine = [(r, avg) for r, avg in scored if r.framework == framework]
        ax.scatter(
            [r.cost_per_deck for r, _ in mine],
            [avg for _, avg in mine],
            s=60,
            color=colours[framework],
            label=framework,
            zorder=3,
        )
    for r, avg in scored:
        ax.annotate(r.label, (r.cost_per_deck, avg), textcoords="offset points", xytext=(5, 5), fontsize=8)
    frontier = [scored[i] for i in pareto_frontier([(r.cost_per_deck, avg) for r, avg in scored])]
    if frontier:
        ax.step(
            [r.cost_per_deck for r, _ in frontier],
            [avg for _, avg in frontier],
            where="post",
            linestyle="--",
            color="grey",
            label="Pareto frontier",
            zorder=2,
        )
    ax.set_xlabel("generation cost per deck (USD; llm.price)")
    ax.set_ylabel("Avg. (0-5)")
    ax.set_title("Performance vs. price")
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    if scored:
        ax.legend(fontsize=8, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    return path
