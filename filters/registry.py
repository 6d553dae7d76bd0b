"""Every gate, in pipeline order: the rule gates first, then the model judges (`filters.gates` names a subset).

A new gate is its module (a Gate class and a `SPEC`, see filters/gates.py) plus one line here.
"""

from __future__ import annotations

from filters import consistency, constraints, content, quality
from filters.gates import GateSpec

GATES: dict[str, GateSpec] = {
    spec.name: spec
    for spec in (
        constraints.SPEC,
        content.SPEC,
        consistency.SPEC,
        quality.SPEC,
    )
}
