"""Fixtures of the eval tests: a tiny image encoder (the shared helpers: tests/eval/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised DINOv2 (2 layers, width 32) and its image processor, saved locally: no download."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    folder = tmp_path_factory.mktemp("tiny-dinov2")
    config = Dinov2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=56, patch_size=14
    )
    Dinov2Model(config).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}).save_pretrained(folder)
    return folder
