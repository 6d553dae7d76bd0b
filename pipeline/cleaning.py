"""Cleaning the written tasks: language check, near-duplicate removal, decontaminated split.

Near-duplicates are found with MinHash/LSH over character 3-grams (works for
Chinese as well as English). The split is stratified by source and language and
assigns whole groups to one side: tasks from the same source document, and
near-duplicate instructions, never straddle train and eval.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Iterable, Sequence

from datasketch import MinHash, MinHashLSH

from core.language import detect_language
from core.records import Task

NUM_PERM = 128


def minhash(text: str) -> MinHash:
    text = " ".join(text.lower().split())
    sig = MinHash(num_perm=NUM_PERM, seed=1)
    sig.update_batch([text[i : i + 3].encode() for i in range(max(1, len(text) - 2))])
    return sig


def language_mismatch(instruction: str, declared: str) -> str | None:
    """A reason when the instruction is not written in its declared language, else None."""
    found = detect_language(instruction).lang
    return None if found == declared else f"declared {declared}, detected {found}"


def drop_near_duplicates(texts: Sequence[str], threshold: float) -> list[int]:
    """Indices of texts to drop: each near-duplicate of an earlier kept text."""
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    dropped = []
    for i, text in enumerate(texts):
        sig = minhash(text)
        if lsh.query(sig):
            dropped.append(i)
        else:
            lsh.insert(str(i), sig)
    return dropped


class _Groups:
    """Union-find over task indices."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def contamination_groups(tasks: Sequence[Task], doc_ids: Sequence[str], threshold: float) -> list[int]:
    """A group id per task: same source document or near-duplicate instruction -> same group."""
    groups = _Groups(len(tasks))
    first_of_doc: dict[str, int] = {}
    for i, doc in enumerate(doc_ids):
        groups.union(i, first_of_doc.setdefault(doc, i))
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    for i, task in enumerate(tasks):
        sig = minhash(task.instruction)
        for j in lsh.query(sig):
            groups.union(i, int(j))
        lsh.insert(str(i), sig)
    return [groups.find(i) for i in range(len(tasks))]


def _quotas(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split `total` proportionally to `sizes` (largest remainder, so the quotas sum to `total`)."""
    n = sum(sizes.values())
    exact = {k: total * v / n for k, v in sizes.items()}
    quotas = {k: int(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: exact[k] - quotas[k], reverse=True)[: total - sum(quotas.values())]:
        quotas[k] += 1
    return quotas


def stratified_group_split(
    strata: Sequence[str], groups: Sequence[int], eval_size: int, seed: int
) -> tuple[list[int], list[int]]:
    """Train and eval indices: about `eval_size` eval items, proportional per stratum, whole groups only."""
    n = len(strata)
    if n < 2 or eval_size < 1:
        return list(range(n)), []
    members: dict[int, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    by_stratum: dict[str, list[int]] = defaultdict(list)
    for g, idx in members.items():
        by_stratum[strata[idx[0]]].append(g)  # a group's stratum: that of its first task
    quotas = _quotas({s: sum(len(members[g]) for g in gs) for s, gs in by_stratum.items()}, min(eval_size, n - 1))
    rng = random.Random(seed)
    eval_idx: list[int] = []
    for stratum in sorted(by_stratum):
        group_ids = sorted(by_stratum[stratum])
        rng.shuffle(group_ids)
        taken = 0
        for g in sorted(group_ids, key=lambda g: len(members[g])):  # small groups first: quotas fill closely
            if taken + len(members[g]) <= quotas[stratum]:
                eval_idx += members[g]
                taken += len(members[g])
    eval_set = set(eval_idx)
    return [i for i in range(n) if i not in eval_set], sorted(eval_set)


def shares(values: Iterable[str]) -> dict[str, float]:
    counts: dict[str, int] = defaultdict(int)
    for v in values:
        counts[v] += 1
    total = sum(counts.values()) or 1
    return {k: c / total for k, c in sorted(counts.items())}
