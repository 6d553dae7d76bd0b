"""The Vendi score on hand-made features with known values, and on slide images through a tiny local encoder."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from core.seams.judging import SlideView
from eval.diversity import (
    ImageEncoder,
    deck_diversity,
    deck_features,
    normalised_vendi,
    vendi_score,
)
from tests.eval.helpers import slide_image


def test_identical_items_count_as_one() -> None:
    features = np.tile([[0.3, -1.2, 2.0]], (5, 1))
    assert vendi_score(features) == pytest.approx(1.0)
    assert normalised_vendi(vendi_score(features), 5) == pytest.approx(0.0)


def test_orthogonal_items_count_as_n() -> None:
    features = np.eye(4) * [1.0, 2.0, 0.5, 3.0]  # scale does not matter: the kernel is cosine
    assert vendi_score(features) == pytest.approx(4.0)
    assert normalised_vendi(vendi_score(features), 4) == pytest.approx(1.0)


def test_two_items_at_a_known_angle() -> None:
    s = 0.5  # cosine similarity: K/n has eigenvalues (1 +- s) / 2
    features = np.array([[1.0, 0.0], [s, math.sqrt(1 - s * s)]])
    eigenvalues = [(1 + s) / 2, (1 - s) / 2]
    assert vendi_score(features) == pytest.approx(math.exp(-sum(v * math.log(v) for v in eigenvalues)))  # 1.7548


def test_groups_of_duplicates_count_as_the_groups() -> None:
    features = np.repeat(np.eye(3), [2, 2, 2], axis=0)  # three distinct items, each twice
    assert vendi_score(features) == pytest.approx(3.0)


def test_degenerate_inputs() -> None:
    assert normalised_vendi(1.0, 1) is None
    with pytest.raises(ValueError, match="all zeros"):
        vendi_score(np.array([[0.0, 0.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="non-empty"):
        vendi_score(np.zeros((0, 3)))


def test_a_deck_feature_is_the_mean_of_its_slides() -> None:
    decks = deck_features([np.array([[2.0, 0.0], [0.0, 5.0]]), np.array([[0.0, 1.0]])])
    assert decks == pytest.approx(np.array([[math.sqrt(0.5), math.sqrt(0.5)], [0.0, 1.0]]))


def test_slide_images_through_a_tiny_local_encoder(tmp_path: Path, tiny_encoder: Path) -> None:
    red = slide_image(tmp_path / "a" / "1.png", boxes=[(0, 0, 160, 180, "#c0392b")])
    stripes = slide_image(tmp_path / "b" / "1.png", (20, 20, 20), [(x, 0, x + 8, 180, "#f1c40f") for x in range(0, 320, 16)])
    copy = tmp_path / "c" / "1.png"
    copy.parent.mkdir()
    copy.write_bytes(red.read_bytes())
    encoder = ImageEncoder(str(tiny_encoder), batch_size=2, cache_dir=tmp_path / "features")
    views = [SlideView(1, p) for p in (red, stripes, copy)]
    features = encoder.encode(views)
    assert features.shape == (3, 32) and np.isfinite(features).all()
    assert features[0] == pytest.approx(features[2]) and not np.allclose(features[0], features[1])
    assert len(list(encoder.cache_dir.glob("*.npy"))) == 2  # one per distinct image

    same, raw_same = deck_diversity(encoder, [[views[0]], [views[2]]])
    assert (same, raw_same) == (pytest.approx(0.0, abs=1e-6), pytest.approx(1.0))
    mixed, raw_mixed = deck_diversity(encoder, [[views[0]], [views[1]], [], [views[2]]])  # the empty deck is left out
    assert 1.0 < raw_mixed < 3.0 and 0.0 < mixed < 1.0
    assert deck_diversity(encoder, [[], []]) == (None, None)


def test_an_encoder_that_cannot_load_names_itself(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="diversity.encoder"):
        ImageEncoder(str(tmp_path / "nowhere"), 2, tmp_path)
