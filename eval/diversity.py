"""Diversity: the Vendi score (Friedman and Dieng, 2023) of image features of the rendered decks.

Each slide image goes through an image encoder (DINOv2 in the paper; any transformers
`AutoModel` with an `AutoImageProcessor`, from a local path or a hub id); its pooled
feature (the pooler output, else the mean of the last hidden states) is L2-normalised;
a deck's feature is the normalised mean of its slides'. With the cosine kernel
K = X X^T over n decks, VS = exp(-sum_i l_i log l_i) over the eigenvalues l_i of K/n:
1 when all decks look alike, n when they are all orthogonal. The paper's 0-1 scale is
(VS - 1) / (n - 1) (docs/evaluation.md). Features are cached by slide image hash.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.seams.judging import SlideView


def _unit_rows(features: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a feature vector is all zeros: cosine similarity is undefined")
    return features / norms


def vendi_score(features: np.ndarray) -> float:
    """exp(entropy of the eigenvalues of K/n), K the cosine similarity of the rows of `features`."""
    if features.ndim != 2 or len(features) == 0:
        raise ValueError(f"features must be a non-empty (n, d) array, got shape {features.shape}")
    x = _unit_rows(features.astype(np.float64))
    eigenvalues = np.linalg.eigvalsh(x @ x.T / len(x))
    eigenvalues = eigenvalues[eigenvalues > 1e-12]
    return float(np.exp(-np.sum(eigenvalues * np.log(eigenvalues))))


def normalised_vendi(score: float, n: int) -> float | None:
    """(VS - 1) / (n - 1): 0 when all n items look alike, 1 when all differ; None below two items."""
    return (score - 1) / (n - 1) if n > 1 else None


def deck_features(slide_features: Sequence[np.ndarray]) -> np.ndarray:
    """One row per deck: the normalised mean of its slides' normalised features."""
    return _unit_rows(np.stack([_unit_rows(f).mean(axis=0) for f in slide_features]))


def check_encoder(name: str) -> None:
    """The encoder's config loads (a cheap check before any work; the weights load when scoring)."""
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise ValueError(f"diversity.encoder={name!r} cannot be loaded: {exc}") from exc


class ImageEncoder:
    """A transformers image encoder; torch and transformers are imported only when one is used."""

    def __init__(self, name_or_path: str, batch_size: int, cache_dir: Path):
        import torch
        from transformers import AutoImageProcessor, AutoModel

        try:
            self.processor = AutoImageProcessor.from_pretrained(name_or_path)
            self.model = AutoModel.from_pretrained(name_or_path).eval()
        except (OSError, ValueError) as exc:
            raise ValueError(f"diversity.encoder={name_or_path!r} cannot be loaded: {exc}") from exc
        self.torch = torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model.to(self.device)
        self.batch_size = batch_size
        self.cache_dir = cache_dir / "".join(c if c.isalnum() or c in "-_." else "_" for c in name_or_path.strip("/"))[-80:]

    def _pooled(self, outputs: Any) -> Any:
        pooled = getattr(outputs, "pooler_output", None)
        return pooled if pooled is not None else outputs.last_hidden_state.mean(dim=1)

    def encode(self, slides: Sequence[SlideView]) -> np.ndarray:
        """(len(slides), d) pooled features, computed once per slide image."""
        from PIL import Image

        todo = [s for s in slides if not (self.cache_dir / f"{s.digest}.npy").is_file()]
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            images = []
            for s in batch:
                with Image.open(s.png) as img:
                    images.append(img.convert("RGB"))
            inputs = self.processor(images=images, return_tensors="pt").to(self.device)
            with self.torch.inference_mode():
                features = self._pooled(self.model(**inputs)).float().cpu().numpy()
            for s, f in zip(batch, features):
                _save(self.cache_dir / f"{s.digest}.npy", f)
        return np.stack([np.load(self.cache_dir / f"{s.digest}.npy") for s in slides])


def _save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array)
    os.replace(tmp, path)


def deck_diversity(encoder: ImageEncoder, decks: Sequence[Sequence[SlideView]]) -> tuple[float | None, float | None]:
    """(normalised, raw) Vendi score over `decks` (decks without slides are left out)."""
    decks = [d for d in decks if d]
    if not decks:
        return None, None
    raw = vendi_score(deck_features([encoder.encode(d) for d in decks]))
    return normalised_vendi(raw, len(decks)), raw
