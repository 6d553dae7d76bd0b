"""What one run of the SFT benchmark measured: per-step records, the summary table and its JSON."""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from benchmarks.sft.flops import A800_TFLOPS
from benchmarks.sft.model import FULL_LAYERS
from train.throughput import PAPER_EPOCHS, PAPER_GPU_HOURS, PAPER_GPUS, PAPER_ROLLOUTS

GIB = 2**30


@dataclass(frozen=True)
class Step:
    tokens: int
    documents: int
    images: int
    flops: int  # model FLOPs of the step (benchmarks/sft/flops.py)
    full_flops: int  # the same packs through all of GLM-4.6V-Flash's decoder layers
    seconds: float  # the whole step: collation, forward, backward, optimizer
    data_seconds: float  # collation and the copy to the device
    loss: float


@dataclass(frozen=True)
class Summary:
    tokens_per_s: float  # per GPU (one process, one device)
    tflops: float  # achieved model TFLOP/s
    mfu: Optional[float]  # of the datasheet peak; None when the peak is unknown
    peak_memory_gib: float
    step_seconds: float  # median
    data_seconds: float  # median
    full_tokens_per_s: float  # at the same TFLOP/s through all of GLM-4.6V-Flash's layers
    paper_gpu_hours: float  # 802 rollouts x 5 epochs of this export's mean rollout at full_tokens_per_s
    a800_gpu_hours: Optional[float]  # the same at this MFU on A800s

    @classmethod
    def of(cls, steps: list[Step], peak_memory: int, peak_tflops: Optional[float], tokens_per_rollout: float) -> Summary:
        seconds = sum(s.seconds for s in steps)
        tokens = sum(s.tokens for s in steps)
        flops_per_s = sum(s.flops for s in steps) / seconds
        mfu = flops_per_s / (peak_tflops * 1e12) if peak_tflops else None
        full_flops_per_token = sum(s.full_flops for s in steps) / tokens
        paper_flops = PAPER_ROLLOUTS * PAPER_EPOCHS * tokens_per_rollout * full_flops_per_token
        return cls(
            tokens_per_s=tokens / seconds,
            tflops=flops_per_s / 1e12,
            mfu=mfu,
            peak_memory_gib=peak_memory / GIB,
            step_seconds=statistics.median(s.seconds for s in steps),
            data_seconds=statistics.median(s.data_seconds for s in steps),
            full_tokens_per_s=flops_per_s / full_flops_per_token,
            paper_gpu_hours=paper_flops / flops_per_s / 3600,
            a800_gpu_hours=paper_flops / (mfu * A800_TFLOPS * 1e12) / 3600 if mfu else None,
        )


def table(summary: Summary, layers: int, peak_tflops: Optional[float], memory_kind: str, tokens_per_rollout: float) -> str:
    s = summary
    mfu = (
        f"{s.mfu:.1%} of {peak_tflops:,.0f} TFLOP/s (bf16 datasheet)"
        if s.mfu is not None
        else "n/a (peak unknown: --peak-tflops)"
    )
    a800 = f"; at this MFU on A800s: {s.a800_gpu_hours:,.1f}" if s.a800_gpu_hours is not None else ""
    rows = [
        ("tokens/s/GPU", f"{s.tokens_per_s:,.0f} ({layers} layers)"),
        ("achieved TFLOP/s", f"{s.tflops:,.3g}"),
        ("MFU", mfu),
        (f"peak {memory_kind} memory", f"{s.peak_memory_gib:,.1f} GiB"),
        ("step time", f"{s.step_seconds:,.2f} s median, of which data {s.data_seconds:,.2f} s"),
        (f"tokens/s/GPU, all {FULL_LAYERS} layers", f"{s.full_tokens_per_s:,.0f} (same TFLOP/s)"),
        (
            f"paper setting: {PAPER_ROLLOUTS} rollouts x {PAPER_EPOCHS} epochs",
            f"{s.paper_gpu_hours:,.1f} GPU-hours ({s.paper_gpu_hours / PAPER_GPUS:,.1f} h on {PAPER_GPUS} GPUs){a800}; "
            f"paper: {PAPER_GPU_HOURS} on {PAPER_GPUS} A800s",
        ),
        ("tokens per rollout", f"{tokens_per_rollout:,.0f} (this export, the dataset card's estimate)"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(
        [f"| {'metric'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
        + [f"| {k.ljust(width)} | {v} |" for k, v in rows]
    )


def record(setting: dict[str, Any], data: dict[str, Any], steps: list[Step], summary: Summary) -> dict[str, Any]:
    """The JSON the benchmark writes."""
    return {"setting": setting, "data": data, "summary": asdict(summary), "steps": [asdict(s) for s in steps]}


def compare(records: list[dict[str, Any]]) -> str:
    """One line per run (the table of docs/training.md): `python -m benchmarks.sft.report RESULT.json ...`."""
    lines = [
        "| GPU | layers | max length | attention | Liger | tokens/s/GPU | TFLOP/s | MFU | peak memory | step |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        s, m = r["setting"], r["summary"]
        mfu = f"{m['mfu']:.1%}" if m["mfu"] is not None else "n/a"
        lines.append(
            f"| {s['device']} | {s['layers']} | {s['max_length']:,} | {s['attention']} | {'yes' if s['liger'] else 'no'} | "
            f"{m['tokens_per_s']:,.0f} | {m['tflops']:,.3g} | {mfu} | {m['peak_memory_gib']:,.1f} GiB | "
            f"{m['step_seconds']:,.2f} s |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(compare([json.loads(Path(p).read_text(encoding="utf-8")) for p in sys.argv[1:]]))
