"""Model FLOPs of one SFT step of a GLM-4V, counted from its config; MFU against the GPU's datasheet peak.

Text model (trained: forward + backward = 3 x forward). With hidden size h, L layers,
n_q query and n_kv key/value heads of size d, MLP width I and vocabulary V:

    linear FLOPs per token, forward   F_lin = 2 * [L * (h*(n_q + 2*n_kv)*d + n_q*d*h + 3*h*I) + h*V]
    attention per document of s tokens, per layer, forward (causal)
                                      F_att(s) = 2 * s^2 * n_q * d
                                      (QK^T and PV cost 2*s^2*d each per head; the causal mask halves both)
    one step                          3 * (T * F_lin + L * sum over the documents of F_att(s))

where T is the tokens in the step and s the length of each packed document: packing
is padding-free and a document attends only to itself, so attention is counted at each
document's real length, not at the pack's.

Vision tower (frozen: forward only). Per image with P = t*h*w patches of C*T_p*p*p pixels,
vision hidden D, L_v layers, MLP width out_hidden H, merge m (P / m^2 merged tokens)
and merger MLP width I_m:

    2 * P * (C*T_p*p*p*D + L_v*(3*D*D + D*D + 3*D*H))   patch embedding; qkv, proj, SwiGLU MLP
    + L_v * 4 * P^2 * D                                  full attention within the image
    + 2 * (P / m^2) * (m^2*D*H + H*H + 3*H*I_m)          downsample conv; merger proj + SwiGLU

Not counted (each well under 1%): embeddings, norms, rotary, activations, the loss, and
the forward recomputed by gradient checkpointing (so the ratio is MFU, not hardware
FLOPs utilisation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from transformers import Glm4vConfig

# Dense bf16 tensor-core peak, TFLOP/s, by the vendors' datasheets (SXM parts; PCIe named apart).
PEAK_TFLOPS = (("H100 PCIe", 756.0), ("H100", 989.4), ("H200", 989.4), ("H800", 989.4), ("A100", 312.0), ("A800", 312.0))
A800_TFLOPS = 312.0  # the paper's GPU


@dataclass(frozen=True)
class Shape:
    """The dimensions of a Glm4vConfig that the FLOP count needs."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    mlp: int
    vocab: int
    vision_hidden: int
    vision_layers: int
    vision_mlp: int  # the vision blocks' SwiGLU width (Glm4VisionMlp uses out_hidden_size)
    merger_mlp: int
    out_hidden: int
    patch_pixels: int  # C * temporal_patch * patch * patch
    merge: int

    @classmethod
    def of(cls, config: Glm4vConfig) -> Shape:
        t, v = config.text_config, config.vision_config
        return cls(
            hidden=t.hidden_size,
            layers=t.num_hidden_layers,
            heads=t.num_attention_heads,
            kv_heads=t.num_key_value_heads,
            head_dim=t.hidden_size // t.num_attention_heads,
            mlp=t.intermediate_size,
            vocab=t.vocab_size,
            vision_hidden=v.hidden_size,
            vision_layers=v.depth,
            vision_mlp=v.out_hidden_size,
            merger_mlp=v.intermediate_size,
            out_hidden=v.out_hidden_size,
            patch_pixels=v.in_channels * v.temporal_patch_size * v.patch_size**2,
            merge=v.spatial_merge_size,
        )

    def with_layers(self, layers: int) -> Shape:
        return Shape(**{**self.__dict__, "layers": layers})

    @property
    def layer_weights(self) -> int:
        """Matrix weights of one decoder layer (q, k, v, o, gate_up, down)."""
        h, d = self.hidden, self.head_dim
        return h * (self.heads + 2 * self.kv_heads) * d + self.heads * d * h + 3 * h * self.mlp

    def text_forward_per_token(self) -> int:
        return 2 * (self.layers * self.layer_weights + self.hidden * self.vocab)

    def attention_forward(self, document: int) -> int:
        """Causal attention of one document, all layers."""
        return self.layers * 2 * document**2 * self.heads * self.head_dim

    def vision_forward(self, grid: Sequence[int]) -> int:
        """One image with patch grid (t, h, w)."""
        patches = grid[0] * grid[1] * grid[2]
        d, out = self.vision_hidden, self.out_hidden
        per_patch = self.patch_pixels * d + self.vision_layers * (4 * d * d + 3 * d * self.vision_mlp)
        merged = patches // self.merge**2
        merger = self.merge**2 * d * out + out * out + 3 * out * self.merger_mlp
        return 2 * patches * per_patch + self.vision_layers * 4 * patches**2 * d + 2 * merged * merger

    def step(self, documents: Sequence[int], grids: Sequence[Sequence[int]]) -> int:
        """Model FLOPs of one training step over packed documents (token counts) and their images' grids."""
        text = 3 * (sum(documents) * self.text_forward_per_token() + sum(self.attention_forward(s) for s in documents))
        return text + sum(self.vision_forward(g) for g in grids)


def peak_tflops(device_name: str) -> Optional[float]:
    """The datasheet peak for a GPU name (torch.cuda.get_device_name), None when unknown (and on CPUs)."""
    for key, peak in PEAK_TFLOPS:
        if key in device_name:
            return peak
    return None
