"""Tokens per sample, padding with and without packing, and the GPU-hours of the paper's training run.

    python -m benchmarks.packing                               # a synthetic export (built untimed in a temp dir)
    python -m benchmarks.packing --export runs/my-run/sft --model-dir /models/GLM-4.6V-Flash

For an exported set (train.jsonl + val.jsonl), counts each sample's tokens (the real
template with --model-dir, else the estimate of train/tokens.py) and reports:
- padding when every sample is padded to max_length (static shapes), and when a
  micro-batch of B samples is padded to its longest (B = 1 has none, but then each
  step holds a single sample);
- packing at max_length (as MS-SWIFT's `--packing` packs, train/batching.py): packs,
  their fill, and the padding share if each pack were padded to max_length (with
  padding-free packing no padding is computed at all);
- the GPU-hours of the paper's setting (802 accepted rollouts, 5 epochs) at a stated
  training throughput, from the mean tokens per rollout (its agents' samples together).
  The throughput is an assumption, not a measurement: 1,000 tokens/s per GPU is about
  35% MFU for a 9B model on an A800 with gradient checkpointing and long sequences.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Optional

from core.run.reader import RunReader
from fakes.runs import build_run, training_run
from train.batching import packs as ms_swift_packs
from train.config import SWIFT_TEMPLATE, ExportConfig, HistoryReasoning
from train.export import export_run
from train.throughput import PAPER_EPOCHS, PAPER_GPU_HOURS, PAPER_ROLLOUTS
from train.tokens import count_rows, make_counter

SYNTHETIC = training_run(
    tasks=40, failed=0, rejected_every=10**9, steps=8, steps_max=16, observation_chars=3000, render_size=(1280, 720)
)


def load(export: Path, model_dir: Optional[str]) -> tuple[list[tuple[str, int]], str]:
    """(task_id, tokens) per sample, and how they were counted."""
    counter = make_counter(model_dir, SWIFT_TEMPLATE, "glm4_5")
    counted = [item for name in ("train.jsonl", "val.jsonl") for item in count_rows(export / name, counter)]
    return [(row["task_id"], count.total) for row, count in counted], counter.method


def batch_padding(lengths: list[int], batch: int, seed: int = 0) -> float:
    order = lengths[:]
    random.Random(seed).shuffle(order)
    padded = sum(max(chunk) * len(chunk) for chunk in (order[i : i + batch] for i in range(0, len(order), batch)))
    return 1 - sum(order) / padded


def report(samples: list[tuple[str, int]], method: str, max_length: int, tokens_per_s: float, gpus: int) -> str:
    lengths = sorted(n for _, n in samples)
    fitting = [n for n in lengths if n <= max_length]
    per_rollout: dict[str, int] = defaultdict(int)
    for task_id, n in samples:
        per_rollout[task_id] += n
    packs = [sum(pack) for pack in ms_swift_packs(fitting, max_length)]  # the fill of each pack, packed as swift sft packs
    mean_rollout = statistics.mean(per_rollout.values())
    total = mean_rollout * PAPER_ROLLOUTS * PAPER_EPOCHS
    static = 1 - sum(fitting) / (len(fitting) * max_length)
    hours_packed = total / tokens_per_s / 3600
    hours_static = total / (1 - static) / tokens_per_s / 3600
    lines = [
        f"samples: {len(lengths)} from {len(per_rollout)} rollouts; tokens counted by {method}",
        (
            f"tokens per sample: mean {statistics.mean(lengths):,.0f}, median {statistics.median(lengths):,.0f}, "
            f"p90 {lengths[int(0.9 * (len(lengths) - 1))]:,}, max {lengths[-1]:,}; "
            f"over max_length {max_length:,}: {len(lengths) - len(fitting)}"
        ),
        f"tokens per rollout (researcher + presenter): mean {mean_rollout:,.0f}",
        "padding without packing:",
        f"  every sample padded to max_length: {static:.1%}",
        f"  micro-batch of 1 padded to its longest: {batch_padding(fitting, 1):.1%} (one sample per step)",
        f"  micro-batch of 4 padded to its longest: {batch_padding(fitting, 4):.1%}",
        (
            f"packing at {max_length:,}: {len(fitting)} samples -> {len(packs)} packs, "
            f"mean fill {statistics.mean(packs) / max_length:.1%}; "
            f"padding if packs were padded to max_length: {1 - sum(packs) / (len(packs) * max_length):.1%} (padding-free: none)"
        ),
        f"paper setting: {PAPER_ROLLOUTS} rollouts x {PAPER_EPOCHS} epochs = {total / 1e6:,.1f} M training tokens",
        (
            f"  at {tokens_per_s:,.0f} tokens/s per GPU: {hours_packed:,.1f} GPU-hours packed "
            f"({hours_packed / gpus:,.1f} h on {gpus} GPUs); "
            f"{hours_static:,.1f} GPU-hours if every sample were padded to max_length"
        ),
        f"  (the paper reports about {PAPER_GPU_HOURS} GPU-hours on 8 A800s)",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, help="an export folder (default: build a synthetic one)")
    parser.add_argument("--model-dir", help="local processor files: count with the real template")
    parser.add_argument("--max-length", type=int, default=51_200)
    parser.add_argument("--tokens-per-s", type=float, default=1_000.0, help="assumed training throughput per GPU")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument(
        "--history-reasoning",
        choices=[m.value for m in HistoryReasoning],
        default=HistoryReasoning.exact.value,
        help="how the synthetic export treats reasoning the template hid (train.export --history-reasoning)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        export = args.export
        if export is None:
            run = build_run(Path(tmp) / "run", SYNTHETIC)
            cfg = ExportConfig(max_length=10**9, val_fraction=0.05, history_reasoning=HistoryReasoning(args.history_reasoning))
            export = export_run(RunReader(run), cfg).out_dir
            shape = f"{len(SYNTHETIC.rollouts)} rollouts, {SYNTHETIC.steps}-{SYNTHETIC.steps_max} work steps per agent"
            print(f"synthetic export: {shape}, history_reasoning={cfg.history_reasoning.value}")
        samples, method = load(export, args.model_dir)
        print(report(samples, method, args.max_length, args.tokens_per_s, args.gpus))


if __name__ == "__main__":
    main()
