"""SFT throughput of GLM-4.6V-Flash (tokens/s/GPU, TFLOP/s, MFU, memory) on an export's samples, no download.

    python -m benchmarks.sft_throughput --size tiny --steps 3                      # CPU: the machinery runs (~1 min)
    python -m benchmarks.sft_throughput --size full --layers 8 --max-length 51200  # one GPU
    bash scripts/gpu_benchmark.sh                                                   # the prepared H200 run

A GLM-4V with random weights (`--size tiny`: the CI model; `full`: GLM-4.6V-Flash's
dimensions, `--layers` of its 40 decoder layers; benchmarks/sft/model.py) trains on the
export's rows, encoded, packed to `--max-length` and collated by MS-SWIFT as `swift sft
--packing true` does (benchmarks/sft/data.py), with train.sft's options: bf16, gradient
checkpointing, vision tower and aligner frozen, one pack per step (per-device batch 1),
the attention backend at hand, Liger kernels when importable on a GPU. The optimizer is
AdamW (lr 1e-5) on a GPU; on a CPU, where the run checks the code path and measures
nothing worth keeping, plain SGD applied during the backward pass, so that neither
optimizer state nor a full set of gradients is held and the full-width check fits in
memory; for the same reason the loss is computed a chunk of tokens at a time instead of
from the logits of the whole pack (benchmarks/sft/loss.py). After `--warmup` steps it
times `--steps` steps and prints one table; the same goes to `--json`. FLOPs are counted from the config (benchmarks/sft/flops.py).

`--size tiny` checks that the machinery runs on a CPU (MS-SWIFT's encoding, packing and
collation, the model's forward and backward, the table and the JSON); its figures are not
a throughput. It packs to 2,048 tokens and cuts each longer row to its last quarter of
that, 512 tokens (the end of the conversation: the trained turns and the latest slides),
instead of leaving it out, so that a pack holds four documents; and it runs in float32 on
a CPU, as train.sft's CPU smoke training does. A step's cost is the 151,552-word
vocabulary times the trained tokens, and bf16 matrix products are fast on a CPU only with
AVX512-BF16 or AMX: at the former default (32,768-token packs of whole demo rows, bf16) a
step took minutes on an AVX2-only CPU."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import psutil
import torch

from benchmarks.sft.data import Batches, DataError, load
from benchmarks.sft.flops import Shape, peak_tflops
from benchmarks.sft.loss import chunked_causal_lm_loss
from benchmarks.sft.model import (
    FULL_LAYERS,
    Attention,
    ModelError,
    Size,
    apply_liger,
    attention_implementation,
    build_model,
    model_config,
    write_processor,
)
from benchmarks.sft.report import GIB, Step, Summary, record, table

LEARNING_RATE = 1e-5
LOGIT_BYTES = 2 + 4 + 4  # per logit without a fused loss: bf16 logits, their float32 copy in the loss, its gradient


TINY_MAX_LENGTH = 2048  # packs of the CPU check (--size tiny)
TINY_DOCUMENTS = 4  # tiny cuts each longer row to its last max_length / 4 tokens: four documents a pack


class BenchmarkError(ValueError):
    """A setting that cannot run (the message names the option)."""


def parse(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=Size, choices=list(Size), default=Size.tiny)
    parser.add_argument("--layers", type=int, help="decoder layers (default: the size's own: tiny 2, full 40)")
    parser.add_argument("--data", type=Path, default=Path("runs/demo/sft"), help="an export (train.jsonl, val.jsonl, images/)")
    parser.add_argument(
        "--max-length",
        type=int,
        help="tokens per pack (train.sft's max_length; default: full 51,200, tiny 2,048 with rows cut to a quarter)",
    )
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    parser.add_argument("--attn", type=Attention, choices=list(Attention), default=Attention.auto)
    parser.add_argument(
        "--liger", action=argparse.BooleanOptionalAction, help="Liger kernels (default: when importable on a GPU)"
    )
    parser.add_argument("--peak-tflops", type=float, help="the device's bf16 peak for MFU (default: by GPU name)")
    parser.add_argument("--json", type=Path, help="where to write the results (default: runs/benchmarks/sft_throughput-*.json)")
    args = parser.parse_args(argv)
    args.layers = args.layers or (FULL_LAYERS if args.size is Size.full else 2)
    args.max_length = args.max_length or (51_200 if args.size is Size.full else TINY_MAX_LENGTH)
    for name in ("max_length", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    args.cut_to = max(1, args.max_length // TINY_DOCUMENTS) if args.size is Size.tiny else None
    if args.warmup < 0:
        parser.error(f"--warmup {args.warmup}: must be at least 0")
    args.json = args.json or Path(f"runs/benchmarks/sft_throughput-{args.size.value}-{args.layers}L-{args.max_length}.json")
    return args


def use_liger(requested: Optional[bool], device: torch.device) -> bool:
    from importlib.util import find_spec

    available = device.type == "cuda" and find_spec("liger_kernel") is not None
    if requested and not available:
        raise BenchmarkError("--liger: Liger's Triton kernels need a GPU and the liger-kernel package")
    return available if requested is None else requested


class Loss(str, Enum):
    """How a step's loss is computed (the JSON's `setting.loss`)."""

    liger = "Liger fused linear cross-entropy"
    full_logits = "transformers (logits of the whole pack)"
    chunked = "chunked cross-entropy (CPU)"


def loss_kind(liger: bool, device: torch.device) -> Loss:
    """train.sft's loss on a GPU (Liger's when applied); on a CPU one that never holds the pack's logits."""
    if liger:
        return Loss.liger
    return Loss.full_logits if device.type == "cuda" else Loss.chunked


def check_memory(max_length: int, vocab: int, loss: Loss, device: torch.device) -> None:
    """Fail early when the logits alone of one pack cannot fit."""
    if loss is not Loss.full_logits:
        return
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else psutil.virtual_memory().available
    need = max_length * vocab * LOGIT_BYTES
    if need > free:
        raise BenchmarkError(
            f"--max-length {max_length}: the logits of one pack need about {need / GIB:,.0f} GiB "
            f"({max_length:,} tokens x {vocab:,} vocabulary, no fused loss without Liger); "
            f"{free / GIB:,.0f} GiB are free: lower --max-length"
        )


def model_dtype(size: Size, device: torch.device) -> torch.dtype:
    """train.sft's bf16, except for the tiny model on a CPU: float32, as train.sft trains it there. A CPU multiplies
    bf16 matrices fast only with AVX512-BF16 or AMX (oneDNN's kernels); elsewhere PyTorch falls back to a loop of
    a few GFLOP/s, 7x slower than float32 on the same cores."""
    return torch.float32 if size is Size.tiny and device.type == "cpu" else torch.bfloat16


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def sgd_in_backward(params: list[torch.nn.Parameter]) -> None:
    """Plain SGD applied to each parameter as soon as its gradient is complete, which is then freed (PyTorch's
    optimizer-in-backward pattern): neither optimizer state nor a full set of gradients is ever held."""

    @torch.no_grad()
    def update(param: torch.Tensor) -> None:
        param.add_(param.grad, alpha=-LEARNING_RATE)
        param.grad = None

    for param in params:
        param.register_post_accumulate_grad_hook(update)


def train(
    model: torch.nn.Module, batches: Batches, steps: int, warmup: int, shape: Shape, device: torch.device, loss_type: Loss
) -> list[Step]:
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=LEARNING_RATE, fused=True) if device.type == "cuda" else None
    if optimizer is None:
        sgd_in_backward(params)
    full = shape.with_layers(FULL_LAYERS)
    timed = []
    for step in range(warmup + steps):
        pack = batches.packs[step % len(batches.packs)]
        synchronize(device)
        start = time.perf_counter()
        inputs, grids = batches.collate(pack, model, device)
        synchronize(device)
        data_seconds = time.perf_counter() - start
        loss = chunked_causal_lm_loss(model, inputs) if loss_type is Loss.chunked else model(**inputs, use_cache=False).loss
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        synchronize(device)
        seconds = time.perf_counter() - start
        print(
            f"step {step + 1}/{warmup + steps}{' (warmup)' if step < warmup else ''}: {sum(pack.documents):,} tokens, "
            f"{seconds:.2f} s, loss {loss.item():.3f}",
            flush=True,
        )
        if step >= warmup:
            timed.append(
                Step(
                    sum(pack.documents),
                    len(pack.documents),
                    len(grids),
                    shape.step(pack.documents, grids),
                    full.step(pack.documents, grids),
                    seconds,
                    data_seconds,
                    loss.item(),
                )
            )
    return timed


def main(argv: Optional[list[str]] = None) -> int:
    args = parse(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = model_config(args.size, args.layers)
    attn_label, attn_implementation = attention_implementation(args.attn)
    liger = use_liger(args.liger, device)
    loss = loss_kind(liger, device)
    check_memory(args.max_length, config.text_config.vocab_size, loss, device)
    with tempfile.TemporaryDirectory() as tmp:
        batches = load(args.data, write_processor(args.size, config, Path(tmp) / "processor"), args.max_length, args.cut_to)
    dtype = model_dtype(args.size, device)
    model = build_model(config, device, attn_implementation, dtype)
    if liger:
        apply_liger(model)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    peak = args.peak_tflops or peak_tflops(device_name)
    shape = Shape.of(config)
    setting: dict[str, Any] = {
        "size": args.size.value,
        "layers": args.layers,
        "max_length": args.max_length,
        "device": device_name,
        "peak_tflops": peak,
        "attention": attn_label,
        "liger": liger,
        "loss": loss.value,
        "dtype": str(dtype).removeprefix("torch."),
        "gradient_checkpointing": True,
        "frozen": "vision tower and aligner",
        "optimizer": "AdamW" if device.type == "cuda" else "SGD in backward",
        "steps": args.steps,
        "warmup": args.warmup,
        "torch": torch.__version__,
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
    }
    data = {
        "export": str(args.data),
        "rows": batches.rows,
        "too_long": batches.too_long,
        "cut": batches.cut,
        "packs": len(batches.packs),
        "fill": batches.fill,
        "longest": batches.longest,
        "tokens_per_rollout": batches.tokens_per_rollout,
    }
    print(f"# {' '.join(f'{k}={v}' for k, v in setting.items())}")
    cut = f"{batches.cut} cut to their last {args.cut_to:,} tokens, " if args.cut_to else ""
    print(
        f"# data: {args.data}: {batches.rows} rows, {batches.too_long} longer than {args.max_length:,} left out, "
        f"{cut}{len(batches.packs)} packs, mean fill {batches.fill:.0%}",
        flush=True,
    )
    steps = train(model, batches, args.steps, args.warmup, shape, device, loss)
    summary = Summary.of(steps, peak_memory(device), peak, batches.tokens_per_rollout)
    print(table(summary, args.layers, peak, "GPU" if device.type == "cuda" else "CPU (process RSS)", batches.tokens_per_rollout))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record(setting, data, steps, summary), indent=2) + "\n", encoding="utf-8")
    print(f"# written: {args.json}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchmarkError, DataError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
