"""The SFT throughput benchmark on CPU: the tiny model end to end, packing semantics, the FLOP count, the errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import Glm4vForConditionalGeneration

from benchmarks.sft.flops import Shape, peak_tflops
from benchmarks.sft.loss import chunked_causal_lm_loss
from benchmarks.sft.model import FULL_IMAGE_SIZE, Size, build_model, full_config, model_config, write_processor
from benchmarks.sft.report import compare
from benchmarks.sft_throughput import BenchmarkError, Loss, check_memory, main
from core.config import PROJECT_ROOT
from core.run.reader import RunReader
from fakes.runs import build_run, training_run
from train.config import ExportConfig
from train.export import export_run

# Samples of about 2,000 byte-level tokens: a presenter's (about 1,950, one slide) fits in 2,048, a researcher's (about
# 2,100) not. Without reasoning, so that each trajectory is one sample (train/samples.py splits where reasoning is hidden).
SHORT = training_run(tasks=3, failed=0, steps=1, observation_chars=60, reasoning=False)


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = build_run(tmp_path_factory.mktemp("sft") / "run", SHORT)
    return export_run(RunReader(run), ExportConfig(val_fraction=0)).out_dir


@pytest.mark.swift
@pytest.mark.slow
@pytest.mark.timeout(120)  # about 25 s on two busy cores, also with ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
def test_tiny_run_prints_the_table_and_writes_the_json(export: Path, tmp_path: Path) -> None:
    """The documented command on the smallest packs that still hold a slide: MS-SWIFT's encoding, packing and
    collation, three real training steps of the tiny model, the table and the JSON."""
    out = tmp_path / "tiny.json"
    command = [sys.executable, "-m", "benchmarks.sft_throughput", "--size", "tiny", "--steps", "3", "--max-length", "1024"]
    command += ["--data", str(export), "--json", str(out)]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    for metric in ("tokens/s/GPU", "achieved TFLOP/s", "MFU", "peak CPU (process RSS) memory", "step time", "paper setting"):
        assert f"| {metric}" in done.stdout
    result = json.loads(out.read_text())
    setting, steps, summary, data = result["setting"], result["steps"], result["summary"], result["data"]
    assert len(steps) == 3 and setting["optimizer"] == "SGD in backward" and setting["dtype"] == "float32"
    assert setting["max_length"] == 1024 and setting["loss"] == Loss.chunked.value
    assert data["too_long"] == 0 and data["cut"] == 6 and data["packs"] == 2  # six rows cut to 256 tokens, four a pack
    # each presenter's slide, the end of its row, went through the vision tower
    assert [(s["tokens"], s["documents"], s["images"]) for s in steps] == [(512, 2, 1), (1024, 4, 2), (512, 2, 1)]
    assert all(s["flops"] > 0 and s["loss"] > 0 for s in steps)
    tokens, seconds = sum(s["tokens"] for s in steps), sum(s["seconds"] for s in steps)
    assert summary["tokens_per_s"] == pytest.approx(tokens / seconds)
    assert summary["tflops"] == pytest.approx(sum(s["flops"] for s in steps) / seconds / 1e12)
    assert summary["mfu"] is None and summary["peak_memory_gib"] > 0
    assert "| CPU | 2 | 1,024 | sdpa | no |" in compare([result])


def test_a_cut_keeps_the_tail_and_whole_images() -> None:
    """keep_tail: an image the cut would split goes whole, with its pixels; the first token kept is not trained."""
    from benchmarks.sft.data import keep_tail

    start, end = 90, 91
    ids = [1, 2, start, 5, 5, end, 3, 4, start, 5, end, 6, 7]
    grids = torch.tensor([[1, 2, 2], [1, 1, 2]])
    pixels = torch.arange(6)[:, None].float()  # 4 patches of the first image, 2 of the second
    item = {"input_ids": ids, "labels": list(range(13)), "pixel_values": pixels, "image_grid_thw": grids, "length": 13}
    cut = keep_tail(item, 6, start, end)
    assert cut["input_ids"] == [4, start, 5, end, 6, 7] and cut["labels"] == [-100, 8, 9, 10, 11, 12]
    assert cut["image_grid_thw"].tolist() == [[1, 1, 2]] and cut["pixel_values"][:, 0].tolist() == [4, 5]
    assert cut["length"] == 6 and cut["lengths"] == [6]
    inside = keep_tail(item, 4, start, end)  # the cut falls in the second image: it goes too, and its pixels
    assert inside["input_ids"] == [6, 7] and "pixel_values" not in inside and "image_grid_thw" not in inside
    assert keep_tail(item, 13, start, end)["input_ids"] == ids


@pytest.mark.swift
def test_rows_longer_than_max_length_are_left_out(export: Path, tmp_path: Path) -> None:
    from benchmarks.sft.data import load

    batches = load(export, write_processor(Size.tiny, model_config(Size.tiny, 2), tmp_path / "processor"), 2048)
    assert batches.rows == 6 and batches.too_long == 3  # the researchers' rows, as train.sft would drop them
    assert all(len(pack.documents) == 1 and sum(pack.documents) <= 2048 for pack in batches.packs)


@pytest.mark.swift
def test_the_chunked_loss_is_the_models_loss_with_the_same_gradients(export: Path, tmp_path: Path) -> None:
    from benchmarks.sft.data import Pack, load

    config = model_config(Size.tiny, 2)
    batches = load(export, write_processor(Size.tiny, config, tmp_path / "processor"), 1024, cut_to=256)
    torch.manual_seed(0)
    model = build_model(config, torch.device("cpu"), "sdpa").float()
    rows = (0, 1)
    inputs, _ = batches.collate(Pack(rows, tuple(batches.encoded[i]["length"] for i in rows)), model, torch.device("cpu"))
    inputs["pixel_values"] = inputs["pixel_values"].float()
    trained = [p for p in model.parameters() if p.requires_grad]

    def loss_and_gradients(loss_of) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        return loss.item(), [p.grad.clone() for p in trained]

    full, full_grads = loss_and_gradients(lambda: model(**inputs, use_cache=False).loss)
    chunked, chunked_grads = loss_and_gradients(lambda: chunked_causal_lm_loss(model, inputs, chunk_tokens=100))
    assert int((inputs["labels"][:, 1:] != -100).sum()) > 100  # several chunks
    assert chunked == pytest.approx(full, rel=1e-5)
    for a, b in zip(full_grads, chunked_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.swift
def test_a_pack_trains_each_document_as_if_it_were_alone(export: Path, tmp_path: Path) -> None:
    """The collated pack keeps documents apart: its loss is the token-weighted mean of the documents' own losses."""
    from benchmarks.sft.data import Pack, load

    config = model_config(Size.tiny, 2)
    batches = load(export, write_processor(Size.tiny, config, tmp_path / "processor"), 1024, cut_to=256)
    torch.manual_seed(0)
    model = build_model(config, torch.device("cpu"), "sdpa").float().eval()
    rows = (0, 1)
    documents = tuple(batches.encoded[i]["length"] for i in rows)

    def loss(pack: Pack) -> tuple[float, int]:
        inputs, _ = batches.collate(pack, model, torch.device("cpu"))
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].float()
        with torch.no_grad():
            value = model(**inputs, use_cache=False).loss.item()
        return value, int((inputs["labels"][:, 1:] != -100).sum())

    packed, _ = loss(Pack(rows, documents))
    alone = [loss(Pack((i,), (n,))) for i, n in zip(rows, documents, strict=True)]
    assert packed == pytest.approx(sum(v * n for v, n in alone) / sum(n for _, n in alone), rel=1e-5)


def test_the_flop_count_covers_every_weight_of_glm_46v_flash() -> None:
    config = full_config()
    with torch.device("meta"):
        model = Glm4vForConditionalGeneration(config)
    shape = Shape.of(config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(10.29e9, rel=1e-3)  # 20.6 GB in bf16
    layer = model.model.language_model.layers[0]
    assert shape.layer_weights == sum(m.weight.numel() for m in layer.modules() if isinstance(m, torch.nn.Linear))
    assert shape.text_forward_per_token() == 2 * (40 * shape.layer_weights + model.lm_head.weight.numel())
    visual = model.model.visual
    per_patch = visual.patch_embed.proj.weight.numel() + sum(
        m.weight.numel() for m in visual.blocks.modules() if isinstance(m, torch.nn.Linear)
    )
    merger = visual.downsample.weight.numel() + sum(
        m.weight.numel() for m in visual.merger.modules() if isinstance(m, torch.nn.Linear)
    )
    grid = (1, 52, 92)  # a 1280x720 slide under GLM-4.6V-Flash's image processor
    attention = 24 * 4 * (52 * 92) ** 2 * 1536
    assert shape.vision_forward(grid) == 2 * 52 * 92 * per_patch + attention + 2 * (52 * 92 // 4) * merger
    assert FULL_IMAGE_SIZE == {"shortest_edge": 12_544, "longest_edge": 9_633_792}


def test_attention_is_counted_per_document_not_per_pack() -> None:
    shape = Shape.of(full_config(8))
    one, two = shape.step([4000, 6000], []), shape.step([10_000], [])
    assert two - one == 3 * 8 * 2 * (10_000**2 - 4000**2 - 6000**2) * 32 * 128


def test_peaks_are_the_datasheets() -> None:
    assert peak_tflops("NVIDIA H200") == peak_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert peak_tflops("NVIDIA H100 PCIe") == 756.0 and peak_tflops("NVIDIA A800-SXM4-80GB") == 312.0
    assert peak_tflops("CPU") is None


def test_bad_settings_fail_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match=r"--max-length 100000000: the logits of one pack need"):
        check_memory(100_000_000, 151_552, Loss.full_logits, torch.device("cpu"))
    check_memory(100_000_000, 151_552, Loss.chunked, torch.device("cpu"))  # never holds the pack's logits
    with pytest.raises(SystemExit):
        main(["--steps", "0"])


@pytest.mark.swift
def test_an_export_the_benchmark_cannot_use_is_named(export: Path, tmp_path: Path) -> None:
    from benchmarks.sft.data import DataError

    with pytest.raises(DataError, match=r"--data .*missing: no train.jsonl"):
        main(["--data", str(tmp_path / "missing"), "--max-length", "1024"])
    with pytest.raises(DataError, match=r"none of its \d+ samples fits in --max-length 64"):
        main(["--size", "full", "--data", str(export), "--max-length", "64"])  # tiny would cut them


def test_the_gpu_script_is_valid_bash_and_pins_every_wheel() -> None:
    script = PROJECT_ROOT / "scripts" / "gpu_benchmark.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    text = script.read_text()
    wheels = text.split("WHEELS=(")[1].split(")")[0].split()
    assert wheels and all("==" in w for w in wheels)
    assert {"ms-swift==4.6.0", "liger-kernel==0.8.5"} <= set(wheels)
