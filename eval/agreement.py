"""Agreement between two raters of 1-5 scores: Spearman's rho, exact and within-one agreement, Cohen's kappa.

Scores may be fractional (a deck's mean over slides); exact, within-one and kappa use
them rounded half up to the 1-5 categories, Spearman uses them as they are. A statistic
that is undefined on the data (fewer than two items, a rater who gave one score to
everything) is None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.stats import spearmanr

CATEGORIES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Agreement:
    n: int
    spearman: float | None
    exact: float | None
    within_one: float | None
    kappa: float | None
    kappa_quadratic: float | None


def categories(scores: Sequence[float]) -> np.ndarray:
    """Scores rounded half up and clipped to 1-5."""
    return np.clip(np.floor(np.asarray(scores, dtype=float) + 0.5), CATEGORIES[0], CATEGORIES[-1]).astype(int)


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    rho = float(spearmanr(a, b).statistic)
    return None if math.isnan(rho) else rho


def cohen_kappa(a: Sequence[float], b: Sequence[float], weights: str | None = None) -> float | None:
    """Cohen's kappa over the 1-5 categories; `weights="quadratic"` for the ordinal (weighted) form."""
    if not a:
        return None
    k = len(CATEGORIES)
    observed = np.zeros((k, k))
    for i, j in zip(categories(a) - 1, categories(b) - 1):
        observed[i, j] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights == "quadratic":
        idx = np.arange(k)
        w = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    else:
        raise ValueError(f"weights={weights!r}: expected None or 'quadratic'")
    disagreement = float((w * expected).sum())
    return None if disagreement == 0 else 1.0 - float((w * observed).sum()) / disagreement


def agreement(a: Sequence[float | None], b: Sequence[float | None]) -> Agreement:
    """Agreement over the items both raters scored."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    if not pairs:
        return Agreement(0, None, None, None, None, None)
    gap = np.abs(categories(xs) - categories(ys))
    return Agreement(
        n=len(pairs),
        spearman=spearman(xs, ys),
        exact=float((gap == 0).mean()),
        within_one=float((gap <= 1).mean()),
        kappa=cohen_kappa(xs, ys),
        kappa_quadratic=cohen_kappa(xs, ys, "quadratic"),
    )
