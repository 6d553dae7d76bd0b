"""Typed config of the isolated critic (the `critic/` group)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from core.defects import Severity


class CriticMode(str, Enum):
    extrinsic = "extrinsic"  # a separate model call reviews each inspection (default)
    none = "none"  # no critic: the agent's own reflection only
    rules = "rules"  # findings from measured defects alone, no model call


@dataclass
class CriticConfig:
    mode: CriticMode = CriticMode.extrinsic
    min_severity: Severity = Severity.major  # findings at or above this are injected
