"""One place for each default: a preset in configs/<group>/ only sets what differs from its dataclass."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from omegaconf import OmegaConf

from agents.config import GenerateConfig
from core.config import PROJECT_ROOT
from eval.config import EvalConfig
from pipeline.config import SynthesizeConfig
from train.config import SFTConfig

ROOTS = (SynthesizeConfig, EvalConfig, SFTConfig, GenerateConfig)  # the entry points' root configs
PRESETS = sorted((PROJECT_ROOT / "configs").glob("*/*.yaml"))
ABSENT = object()


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def _default(root: type, group: str | None, key: str) -> Any:
    """The dataclass default at `key` of the group's node (None: the root's, a `# @package _global_` preset)."""
    node = OmegaConf.structured(root)
    value = OmegaConf.select(node[group] if group else node, key, default=ABSENT)
    value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    return getattr(value, "value", value)  # an enum's value, as YAML writes it


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_preset_repeats_no_default(preset: Path) -> None:
    text = preset.read_text(encoding="utf-8")
    group = None if text.startswith("# @package _global_") else preset.parent.name
    roots = [root for root in ROOTS if preset.parent.name in root.__dataclass_fields__]
    assert roots, f"{preset}: no entry point has a `{preset.parent.name}` field"
    repeated = [
        f"{key}: {value!r}"
        for key, value in _leaves(yaml.safe_load(text) or {})
        if all(_default(root, group, key) == value for root in roots)
    ]
    assert not repeated, f"{preset} repeats its dataclass defaults (leave them out): {repeated}"
