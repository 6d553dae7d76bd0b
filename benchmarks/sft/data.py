"""Training batches for the SFT benchmark: an export's rows encoded, packed and collated by MS-SWIFT, as `swift sft` does.

`swift sft --packing true` encodes each row with the `deckforge_glm4_5v` template and `glm4_5` agent
template (loss scale `default+ignore_empty_think`), leaves out rows longer than
max_length (`--truncation_strategy delete`), bins the rest into packs of at most
max_length tokens (best-fit decreasing) and collates each pack padding-free: one row of
tokens, M-RoPE positions restarting at every document. The benchmark does the same with
the same MS-SWIFT calls, and hands the model the text positions as the first of four
position rows, from which transformers builds the per-document attention (a
block-diagonal mask for sdpa and flex, varlen for flash-attn).

With `cut_to` (the tiny size's CPU check) a row longer than that keeps only its last
`cut_to` tokens instead of being left out: the end of the conversation, where the trained
turns and the latest slides are. That is MS-SWIFT's `--truncation_strategy left`, done
here because 4.6 cannot apply it to GLM-4.5V rows with images (it indexes the processor's
misaligned mm_token_type_ids, see `load`); an image the cut would split goes whole, with
its pixels.
"""

from __future__ import annotations

import copy
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from train.tokens import EstimateCounter, TemplateCounter, image_root

SPLITS = ("train.jsonl", "val.jsonl")
IGNORE_INDEX = -100
MODEL_KEYS = ("input_ids", "labels", "pixel_values", "image_grid_thw")


class DataError(ValueError):
    """An export the benchmark cannot train on (the message names it)."""


@dataclass(frozen=True)
class Pack:
    rows: tuple[int, ...]  # indices into Batches.encoded
    documents: tuple[int, ...]  # tokens of each row


@dataclass
class Batches:
    """Encoded rows and their packs; `collate` turns a pack into the model's keyword arguments."""

    template: Any  # MS-SWIFT's Template
    encoded: list[dict[str, Any]]
    packs: list[Pack]
    max_length: int
    rows: int  # rows in the export
    too_long: int  # rows left out for being longer than max_length
    cut: int  # rows cut to their last `cut_to` tokens (load) instead
    tokens_per_rollout: float  # the export's estimate (train/tokens.py), summed over a task's samples
    longest: int  # tokens of the longest row kept
    fill: float  # mean tokens per pack / max_length

    def collate(self, pack: Pack, model: torch.nn.Module, device: torch.device) -> tuple[dict[str, Any], list[list[int]]]:
        """(model kwargs on `device`, the image grids of the pack)."""
        self.template.model = model  # the M-RoPE positions come from the model's get_rope_index, as in swift sft
        batch = self.template.data_collator([[dict(self.encoded[i]) for i in pack.rows]])  # packing_row writes into rows
        inputs = {k: batch[k] for k in MODEL_KEYS if k in batch}
        inputs["position_ids"] = torch.cat([batch["text_position_ids"][None], batch["position_ids"]])
        inputs = {k: v.to(device, non_blocking=True) for k, v in inputs.items()}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
        grids = batch["image_grid_thw"].tolist() if "image_grid_thw" in batch else []
        return inputs, grids


def read_rows(export: Path) -> list[dict[str, Any]]:
    if not (export / "train.jsonl").is_file():
        raise DataError(f"--data {export}: no train.jsonl (an export of python -m train.export, e.g. runs/demo/sft)")
    rows = []
    for name in SPLITS:
        path = export / name
        if path.is_file():
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise DataError(f"--data {export}: the export holds no samples")
    return rows


def tokens_per_rollout(rows: list[dict[str, Any]], export: Path) -> float:
    """Mean tokens per rollout (its agents' samples together), counted as the dataset card does without processor files."""
    counter = EstimateCounter()
    per_task: dict[str, int] = defaultdict(int)
    for row in rows:
        per_task[row.get("task_id", "")] += counter.count({**row, "images": [str(export / p) for p in row["images"]]}).total
    return statistics.mean(per_task.values())


def keep_tail(item: dict[str, Any], tokens: int, image_start: int, image_end: int) -> dict[str, Any]:
    """The last `tokens` tokens of an encoded row, fewer where the cut would split an image; the images before
    the cut are dropped with their pixels. The first token kept is not trained (MS-SWIFT's left truncation)."""
    ids = item["input_ids"]
    start, dropped = len(ids) - tokens, 0
    starts, ends = ([i for i, t in enumerate(ids) if t == marker] for marker in (image_start, image_end))
    for first, last in zip(starts, ends, strict=True):
        if first < start:
            dropped, start = dropped + 1, max(start, last + 1)
    cut = {**item, "input_ids": ids[start:], "labels": [IGNORE_INDEX] + item["labels"][start + 1 :]}
    if "loss_scale" in item:
        cut["loss_scale"] = [0] + item["loss_scale"][start + 1 :]
    if dropped:
        grids = item["image_grid_thw"]
        cut["pixel_values"] = item["pixel_values"][int(grids[:dropped].prod(-1).sum()) :]
        cut["image_grid_thw"] = grids[dropped:]
        if dropped == len(grids):
            del cut["pixel_values"], cut["image_grid_thw"]
    cut["length"] = len(cut["input_ids"])
    cut["lengths"] = [cut["length"]]
    return cut


def load(export: Path, processor_dir: Path, max_length: int, cut_to: Optional[int] = None) -> Batches:
    """Encode every row of `export` with MS-SWIFT's template and pack them to `max_length`; rows longer than
    `cut_to` (at most max_length) are cut to their last `cut_to` tokens, longer than max_length left out."""
    from swift.dataset.packing import calculate_matched_group
    from swift.template.base import MaxLengthError

    rows = read_rows(export)
    template = TemplateCounter(processor_dir).template  # deckforge_glm4_5v + glm4_5, train mode, the swift sft loss scale
    template.max_length = None if cut_to else max_length
    template.padding_free, template.packing = True, True
    image_start, image_end = template.tokenizer.convert_tokens_to_ids(["<|begin_of_image|>", "<|end_of_image|>"])
    encoded, lengths, too_long, cut = [], [], 0, 0
    with image_root(export):
        for row in rows:
            try:
                item = template.encode(copy.deepcopy(row), return_length=True)
            except MaxLengthError:
                too_long += 1
                continue
            # MS-SWIFT 4.6 keeps the processor's mm_token_type_ids of the image placeholders alone (not aligned
            # with input_ids); packing_row then fails on a pack mixing rows with and without images. The rope
            # index rebuilds them from input_ids, so they are dropped.
            item.pop("mm_token_type_ids", None)
            if cut_to and item["length"] > cut_to:
                item, cut = keep_tail(item, cut_to, image_start, image_end), cut + 1
            encoded.append(item)
            lengths.append(item["length"])
    template.max_length = max_length
    if not encoded:
        raise DataError(
            f"--data {export}: none of its {len(rows)} samples fits in --max-length {max_length} "
            "(train.sft leaves longer ones out too); raise --max-length or use an export of shorter samples"
        )
    groups, _ = calculate_matched_group(list(enumerate(lengths)), max_length)
    packs = [Pack(tuple(i for i, _ in g), tuple(n for _, n in g)) for g in groups]
    fill = statistics.mean(sum(p.documents) for p in packs) / max_length
    return Batches(
        template, encoded, packs, max_length, len(rows), too_long, cut, tokens_per_rollout(rows, export), max(lengths), fill
    )
