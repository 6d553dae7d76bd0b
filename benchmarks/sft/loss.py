"""The causal-LM loss of a pack without its full logits in memory, for the CPU check of the code path.

transformers computes the loss from logits of the whole pack: at the 151,552-word vocabulary
that is about 10 bytes x 151,552 per token with the float32 copy and its gradient, 23 GiB for
a 16K-token pack, more than a CPU runner has. On a GPU the benchmark keeps what train.sft
does (that loss, or Liger's fused one), since that is what it measures.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

IGNORE_INDEX = -100
CHUNK_TOKENS = 1024  # logits of one chunk: 1,024 x 151,552 x 10 bytes, about 1.5 GB


def _chunk_loss_sum(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(lm_head(hidden).float(), targets, reduction="sum")


def chunked_causal_lm_loss(model: torch.nn.Module, inputs: dict[str, Any], chunk_tokens: int = CHUNK_TOKENS) -> torch.Tensor:
    """transformers' causal-LM loss for `model(**inputs)` (labels shifted by one, -100 ignored, the mean over
    the rest), with logits computed only where a label is, `chunk_tokens` at a time, and recomputed in the
    backward pass (activation checkpointing): at most one chunk's logits are held at once."""
    model_inputs = {key: value for key, value in inputs.items() if key != "labels"}
    hidden = model.model(**model_inputs, use_cache=False)[0]
    targets = F.pad(inputs["labels"], (0, 1), value=IGNORE_INDEX)[..., 1:].reshape(-1)
    scored = targets != IGNORE_INDEX
    hidden, targets = hidden.reshape(-1, hidden.shape[-1])[scored], targets[scored]
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, len(targets), chunk_tokens):
        chunk = slice(start, start + chunk_tokens)
        total = total + checkpoint(_chunk_loss_sum, model.lm_head, hidden[chunk], targets[chunk], use_reentrant=False)
    return total / scored.sum()
