"""The batch arithmetic: samples per optimizer step with packing, MS-SWIFT's packing mirrored, the dry run's `# batch:` lines."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import ConfigError
from tests.train.helpers import flags, sft
from train.batching import least_loaded_fit, pack_sizes
from train.export import ExportReport
from train.launch import build_plan
from train.tokens import MESSAGE_OVERHEAD

USER = "hi"  # 1 estimated token + the message overhead


def synthetic_export(folder: Path, lengths: list[int]) -> Path:
    """A train.jsonl whose rows train/tokens.py's estimate counts at exactly `lengths` tokens."""
    folder.mkdir(parents=True)
    rows = []
    for n in lengths:
        answer = "a" * 4 * (n - 1 - 2 * MESSAGE_OVERHEAD)  # 4 ASCII characters per token
        rows.append(
            {"tools": "", "messages": [{"role": "user", "content": USER}, {"role": "assistant", "content": answer}], "images": []}
        )
    (folder / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return folder


def test_64_samples_of_10k_on_8_gpus(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 64)
    plan = build_plan(sft(f"train.dataset_dir={export}"), tmp_path, environ={})
    batching = plan.batching
    assert batching is not None and batching.samples == 64 and batching.over_length == 0
    assert batching.pack_sizes == (5,) * 12 + (4,)  # 5 x 10,000 <= 51,200 < 6 x 10,000
    assert f"{batching.samples_per_pack:.2f}" == "4.92"  # 64 / 13
    # 32 samples / (4.92 per pack x 8 GPUs) = 0.81 packs per GPU: the nearest, and the least, is 1
    assert batching.accumulation == 1 and flags(plan.argv)["--gradient_accumulation_steps"] == "1"
    assert batching.packs_per_step == 8
    assert batching.step_samples() == [40]  # 13 // 8 = 1 pack per GPU: one step of 8 packs an epoch
    assert batching.left_out == (5, 5, 5, 5, 4)  # 5 packs, 24 samples: no GPU gets them
    assert batching.run_steps() == 5  # 5 epochs


def test_one_gpu_accumulates_to_about_32_samples(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 64)
    batching = build_plan(sft(f"train.dataset_dir={export}", "train.nproc_per_node=1"), tmp_path, environ={}).batching
    assert batching is not None and batching.accumulation == 7  # 32 / 4.92 = 6.5 -> 7 packs per step
    assert batching.step_samples() == [35, 29] and batching.left_out == ()  # 7 packs, then the 6 left
    assert batching.run_steps() == 10


def test_samples_against_packs_on_pairs(tmp_path: Path) -> None:
    """25K-token samples pack two by two: 32 samples is 2 packs per GPU; 32 packs would be 64 samples."""
    export = synthetic_export(tmp_path / "sft", [25_000] * 64)
    samples = build_plan(sft(f"train.dataset_dir={export}"), tmp_path, environ={}).batching
    packs = build_plan(sft(f"train.dataset_dir={export}", "train.batch_unit=packs"), tmp_path, environ={}).batching
    assert samples is not None and packs is not None
    assert samples.pack_sizes == packs.pack_sizes == (2,) * 32
    assert (samples.accumulation, samples.step_samples(), samples.run_steps()) == (2, [32, 32], 10)
    assert (packs.accumulation, packs.step_samples(), packs.run_steps()) == (4, [64], 5)  # today's: 32 / (1 x 8)


def test_packs_keeps_the_old_accumulation(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 64)
    for overrides in ([], ["train.per_device_batch_size=2"]):
        plan = build_plan(sft(f"train.dataset_dir={export}", "train.batch_unit=packs", *overrides), tmp_path, environ={})
        assert plan.gradient_accumulation == 32 // (plan.per_device_batch * 8)
    with pytest.raises(ConfigError, match="not a multiple"):
        build_plan(sft(f"train.dataset_dir={export}", "train.batch_unit=packs", "train.per_device_batch_size=3"), tmp_path, {})


def test_without_packing_a_sample_is_a_pack(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 64 + [60_000])
    batching = build_plan(sft(f"train.dataset_dir={export}", "train.packing=false"), tmp_path, environ={}).batching
    assert batching is not None and batching.pack_sizes == (1,) * 64 and batching.over_length == 1
    assert (batching.accumulation, batching.step_samples()) == (4, [32, 32])


def test_fewer_packs_than_gpus_is_a_config_error_and_a_dry_run_says_so(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 3)
    with pytest.raises(ConfigError, match=r"1 pack\(s\) for 8 GPU\(s\): .* here none"):
        build_plan(sft(f"train.dataset_dir={export}"), tmp_path, environ={})
    dry = build_plan(sft(f"train.dataset_dir={export}", "train.dry_run=true"), tmp_path, environ={}).render()
    assert "# batch: PROBLEM: nothing would train: 1 pack(s) for 8 GPU(s)" in dry


def test_a_broken_row_names_its_line(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 8)
    with (export / "train.jsonl").open("a") as f:
        f.write("{not json\n")
    with pytest.raises(ConfigError, match=r"train.jsonl:9: cannot count"):
        build_plan(sft(f"train.dataset_dir={export}"), tmp_path, environ={})


def test_the_real_export_is_counted_with_its_images(exported: ExportReport, tmp_path: Path) -> None:
    plan = build_plan(sft(f"train.dataset_dir={exported.out_dir}", "train.nproc_per_node=1"), tmp_path, environ={})
    assert plan.batching is not None and plan.batching.samples == len(exported.train)
    assert sum(plan.batching.pack_sizes) == len(exported.train)


def test_the_dry_run_prints_the_arithmetic(tmp_path: Path) -> None:
    export = synthetic_export(tmp_path / "sft", [10_000] * 64)
    done = subprocess.run(
        [sys.executable, "-m", "train.sft", f"run.dir={tmp_path}", "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    batch = [line for line in done.stdout.splitlines() if line.startswith("# batch:")]
    assert batch[0].startswith("# batch: train.global_batch_size=32 counts samples (train.batch_unit); tokens: estimate")
    assert batch[1:] == [
        "# batch: samples in the export: 64 (train.jsonl)",
        "# batch: packs: 13 of at most 51,200 tokens, 4.92 samples per pack (mean)",
        "# batch: packs per optimizer step: 8 = 1 per device x 1 accumulation x 8 GPU(s)",
        "# batch: samples per optimizer step: 40.0 mean (global batch 32), 40-40 over the 1 step(s) of an epoch",
        "# batch: optimizer steps: 1 per epoch, 5 for the run (5 epochs)",
        "# batch: never trained: 5 pack(s), 24 sample(s): MS-SWIFT gives each GPU 13 // 8 = 1 pack(s) per epoch and drops the rest",
    ]
    assert f"--dataset {export / 'train.jsonl'}" in done.stdout and "--gradient_accumulation_steps 1" in done.stdout


def test_least_loaded_fit_is_binpackings() -> None:
    binpacking = pytest.importorskip("binpacking")
    rng = random.Random(0)
    items = [(i, rng.randint(1_000, 30_000)) for i in range(300)]
    assert least_loaded_fit(items, 51_200) == binpacking.to_constant_volume(items, 51_200, weight_pos=1)


@pytest.mark.swift
def test_pack_sizes_are_ms_swifts_packing() -> None:
    """2,500 rows: three chunks of PackingDataset, the last pack of each carried into the next."""
    import queue

    from swift.dataset.packing import PackingDataset

    rng = random.Random(1)
    lengths = [rng.randint(500, 40_000) for _ in range(2_500)]
    out: queue.Queue = queue.Queue()
    PackingDataset.create_packed_idx(0, 0, lengths, out, 51_200, "binpack")
    swift_packs = []
    while (message := out.get())[2] != -1:
        swift_packs += message[1]
    assert pack_sizes(lengths, 51_200) == tuple(len(pack) for pack in swift_packs)
