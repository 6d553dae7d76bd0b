"""The model the SFT benchmark trains: a GLM-4V with random weights, built from a config (no download).

`tiny` is the CI model of scripts/make_tiny_model.py. `full` has GLM-4.6V-Flash's
dimensions (10.29 B parameters, which matches the 20.6 GB of bf16 weights the model's
hub page lists). No copy of zai-org/GLM-4.6V-Flash's own config.json is reachable from
here; the figures come from public configs of its fine-tunes and conversions, which
repeat it: huggingface.co/AiAsistent/GLM-4.6V-Flash-Polymath-Instruct/blob/main/config.json
(text: hidden 4096, 40 layers, 32 heads, 2 KV heads, MLP 13696, vocabulary 151552,
rope theta 500000, M-RoPE sections [8, 12, 12] over half of each head, untied lm_head;
vision: 24 layers, hidden 1536) and transformers' Glm4vVisionConfig defaults, which its
docstring gives as GLM-4.1V-9B's vision tower, the one GLM-4.6V-Flash keeps (12 heads,
out_hidden 4096, merger MLP 13696, patch 14, 2x2 merge, 2 frames per patch); the image
processor bounds are GLM-4.6V-Flash's preprocessor_config.json (shortest_edge 12544,
longest_edge 9633792), as copied by huggingface.co/a2s-ai/GLM-4.6V-Flash.

What is trained follows `python -m train.sft`: bf16 weights, gradient checkpointing,
the vision tower and its aligner frozen (MS-SWIFT's glm4v model_arch names them
`model.visual` and `model.visual.merger`), the language model fully trained.
"""

from __future__ import annotations

import importlib.util
from enum import Enum
from pathlib import Path
from typing import Any

import torch
from transformers import Glm4vConfig, Glm4vForConditionalGeneration

from scripts.make_tiny_model import (
    SPECIAL_TOKENS,
    TINY_IMAGE_SIZE,
    VOCAB_SIZE,
    build_processor,
    build_tokenizer,
    media_token_ids,
    tiny_config,
)

FULL_LAYERS = 40
FULL_IMAGE_SIZE = {"shortest_edge": 12_544, "longest_edge": 9_633_792}
FLEX = "deckforge_document_flex"  # FlexAttention under a name of our own: transformers offers it to Glm4v only this way


class Size(str, Enum):
    tiny = "tiny"
    full = "full"


class Attention(str, Enum):
    auto = "auto"  # flash-attn when importable, else sdpa
    sdpa = "sdpa"  # PyTorch SDPA; packed documents get a block-diagonal mask
    flash = "flash"  # flash-attn 2 (varlen over the packed documents)
    flex = "flex"  # PyTorch FlexAttention with a document mask; skips the masked blocks (compiled: minutes on CPU)


class ModelError(ValueError):
    """A setting that cannot be built here (the message names the option)."""


def full_config(layers: int = FULL_LAYERS) -> Glm4vConfig:
    """GLM-4.6V-Flash's architecture with `layers` decoder layers (see the module docstring for the sources)."""
    return Glm4vConfig(
        text_config=dict(
            vocab_size=VOCAB_SIZE,
            hidden_size=4096,
            intermediate_size=13_696,
            num_hidden_layers=layers,
            num_attention_heads=32,
            num_key_value_heads=2,
            max_position_embeddings=131_072,
            pad_token_id=SPECIAL_TOKENS["<|endoftext|>"],
            rms_norm_eps=1e-5,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 500_000.0,
                "partial_rotary_factor": 0.5,
                "mrope_section": [8, 12, 12],
            },
        ),
        vision_config=dict(
            depth=24,
            hidden_size=1536,
            intermediate_size=13_696,
            num_heads=12,
            out_hidden_size=4096,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            image_size=336,
        ),
        tie_word_embeddings=False,
        **media_token_ids(),
    )


def model_config(size: Size, layers: int) -> Glm4vConfig:
    if layers < 1:
        raise ModelError(f"--layers {layers}: must be at least 1")
    return full_config(layers) if size is Size.full else tiny_config(layers)


def write_processor(size: Size, config: Glm4vConfig, out_dir: Path) -> Path:
    """Config and processor files for MS-SWIFT's get_processor: the byte-level tokenizer with GLM-4.5V's
    special-token ids (scripts/make_tiny_model.py) and the size's image processor."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config.architectures = [Glm4vForConditionalGeneration.__name__]  # how MS-SWIFT tells the model type
    config.save_pretrained(out_dir)
    build_processor(build_tokenizer(), FULL_IMAGE_SIZE if size is Size.full else TINY_IMAGE_SIZE).save_pretrained(out_dir)
    return out_dir


def _register_flex() -> None:
    from transformers import AttentionInterface
    from transformers.integrations.flex_attention import flex_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, flex_attention_mask

    AttentionInterface.register(FLEX, flex_attention_forward)
    AttentionMaskInterface.register(FLEX, flex_attention_mask)


def attention_implementation(choice: Attention) -> tuple[str, Any]:
    """(a label, the `attn_implementation` to build with) for a choice; the vision tower keeps sdpa under flex."""
    has_flash = importlib.util.find_spec("flash_attn") is not None
    if choice is Attention.flash and not has_flash:
        raise ModelError("--attn flash: the flash_attn package is not installed (use --attn sdpa or flex)")
    if choice is Attention.flash or (choice is Attention.auto and has_flash):
        return "flash_attention_2", "flash_attention_2"
    if choice is Attention.flex:
        _register_flex()
        return "flex (document mask)", {"text_config": FLEX, "vision_config": "sdpa", "": "sdpa"}
    return "sdpa", "sdpa"


def build_model(
    config: Glm4vConfig, device: torch.device, attn_implementation: Any, dtype: torch.dtype = torch.bfloat16
) -> Glm4vForConditionalGeneration:
    """Random weights on `device` (bf16 unless told), set up for training as train.sft does."""
    with torch.device(device):
        model = Glm4vForConditionalGeneration._from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    model.model.visual.requires_grad_(False)  # --freeze_vit true --freeze_aligner true
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    return model.train()


def apply_liger(model: Glm4vForConditionalGeneration) -> None:
    """Liger's GLM-4V kernels: RMSNorm, SwiGLU and the fused linear cross-entropy (no logits in memory)."""
    from liger_kernel.transformers import apply_liger_kernel_to_glm4v

    apply_liger_kernel_to_glm4v(model=model)
