"""How an export's samples reach the optimizer: packs, packs per step, samples per step, steps.

With `--packing true` MS-SWIFT's unit of the batch is a pack (several samples, at most
`max_length` tokens), so `train.global_batch_size=32` with one pack per GPU is 32 packs.
With `train.batch_unit=samples` (the default) the launcher counts the tokens of every row
of train.jsonl, packs them as MS-SWIFT 4.6 does and sizes the gradient accumulation so that
an optimizer step holds about `global_batch_size` samples (at least one pack per GPU).

What is mirrored, from ms-swift 4.6 and the binpacking it installs (2.0.1):
- packing (`swift.dataset.packing.PackingDataset`, `packing_num_proc=1`): the rows, in
  order, 1,000 at a time, each chunk packed by `binpacking.to_constant_volume`: sorted by
  length, longest first, each into the least-filled pack it fits, else a new pack; the last
  pack of a chunk is carried into the next one. (binpacking 1.x chose the fullest pack that
  fits instead.)
- dealing (`swift.dataloader.BatchSamplerShard`): each GPU takes `packs // GPUs` packs per
  epoch; the last `packs % GPUs` packs of the packing order are never trained. Steps here
  take the packs unshuffled; the default shuffle changes which packs share a step, not how
  many.
- stepping (transformers 5.19's Trainer): an epoch's last step takes the micro-batches left
  over, so an epoch is `ceil(micro-batches per GPU / accumulation)` steps, and the run epochs
  times that (or max_steps).
Where they differ: the token counts are the estimate of train/tokens.py unless the model is a
local directory with processor files (then MS-SWIFT's template); MS-SWIFT shuffles the rows
before packing (`--dataset_shuffle`, default true), which changes nothing up to 1,000 rows
(one chunk, sorted) and beyond that which rows share a chunk, so the pack count a little; a
row over max_length is left out (`--truncation_strategy delete`) or counted as max_length
(left / right; split's further pieces are not counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from core.config import ConfigError
from train.config import BatchUnit, ModelSpec, TrainArgs
from train.tokens import count_rows, make_counter

PACKING_CHUNK = 1000  # PackingDataset.PACKING_BATCH_SIZE


@dataclass(frozen=True)
class Batching:
    """The batch arithmetic of one training run on one export."""

    unit: BatchUnit
    global_batch: int
    samples: int  # rows of train.jsonl
    over_length: int  # of them longer than max_length
    pack_sizes: tuple[int, ...]  # samples per pack, in MS-SWIFT's packing order (1 each without packing)
    max_length: int
    truncation_strategy: str
    packing: bool
    world_size: int
    per_device: int
    accumulation: int
    epochs: int
    max_steps: Optional[int]
    token_method: str

    @property
    def packs_per_step(self) -> int:
        return self.per_device * self.accumulation * self.world_size

    @property
    def samples_per_pack(self) -> float:
        return sum(self.pack_sizes) / len(self.pack_sizes)

    @property
    def left_out(self) -> tuple[int, ...]:
        """Packs no GPU gets: each takes packs // GPUs of them."""
        return self.pack_sizes[len(self.pack_sizes) // self.world_size * self.world_size :]

    @property
    def starved(self) -> Optional[str]:
        """Why nothing would train (fewer packs than GPUs), or None."""
        if len(self.pack_sizes) >= self.world_size:
            return None
        kind = "pack(s)" if self.packing else "sample(s)"
        return (
            f"{len(self.pack_sizes)} {kind} for {self.world_size} GPU(s): MS-SWIFT gives each GPU packs // GPUs per epoch, "
            "here none; export more samples or set train.nproc_per_node"
        )

    def step_samples(self) -> list[int]:
        """Samples in each optimizer step of one epoch (packs dealt unshuffled)."""
        used, per_step = len(self.pack_sizes) - len(self.left_out), self.packs_per_step
        return [sum(self.pack_sizes[i : i + per_step]) for i in range(0, used, per_step)]

    def run_steps(self) -> int:
        return self.max_steps if self.max_steps is not None else self.epochs * len(self.step_samples())

    def lines(self) -> list[str]:
        """The arithmetic, one `# batch:` line per figure, then what is left out."""
        packs = (
            f"{len(self.pack_sizes)} of at most {self.max_length:,} tokens, {self.samples_per_pack:.2f} samples per pack (mean)"
            if self.packing
            else "packing off: each sample is a pack of its own"
        )
        target = f" (global batch {self.global_batch})" if self.unit is BatchUnit.samples else ""
        run = "train.max_steps" if self.max_steps is not None else f"{self.epochs} epochs"
        steps = self.step_samples()
        per_step = (
            f"{sum(steps) / len(steps):.1f} mean{target}, {min(steps)}-{max(steps)} over the {len(steps)} step(s) of an epoch"
            if steps
            else "none: no GPU gets a pack"
        )
        lines = [
            f"train.global_batch_size={self.global_batch} counts {self.unit.value} (train.batch_unit); tokens: {self.token_method}",
            f"samples in the export: {self.samples} (train.jsonl)",
            f"packs: {packs}",
            f"packs per optimizer step: {self.packs_per_step} = {self.per_device} per device x {self.accumulation} "
            f"accumulation x {self.world_size} GPU(s)",
            f"samples per optimizer step: {per_step}",
            f"optimizer steps: {len(steps)} per epoch, {self.run_steps() if steps else 0} for the run ({run})",
        ]
        if self.starved:
            lines.append(f"PROBLEM: nothing would train: {self.starved}")
        return ["# batch: " + line for line in lines + self._left_out_lines()]

    def _left_out_lines(self) -> list[str]:
        lines = []
        if self.left_out:
            lines.append(
                f"never trained: {len(self.left_out)} pack(s), {sum(self.left_out)} sample(s): MS-SWIFT gives each GPU "
                f"{len(self.pack_sizes)} // {self.world_size} = {len(self.pack_sizes) // self.world_size} pack(s) per epoch "
                "and drops the rest"
            )
        if self.over_length and self.truncation_strategy == "delete":
            lines.append(f"{self.over_length} sample(s) over max_length left out here; `swift sft --strict true` stops on one")
        elif self.over_length:
            lines.append(f"{self.over_length} sample(s) over max_length counted as max_length ({self.truncation_strategy})")
        return lines


def sample_lengths(train: Path, model: ModelSpec) -> tuple[list[int], str]:
    """Tokens of each row of train.jsonl: MS-SWIFT's template when the model is a local directory
    with processor files, else the estimate; and how they were counted."""
    counter = make_counter(model.id if model.hub == "local" else None, model.template, model.agent_template)
    try:
        counted = count_rows(train, counter)
    except ValueError as exc:
        raise ConfigError(f"{exc}; check it: python -m train.export --validate") from exc
    return [count.total for _, count in counted], counter.method


def least_loaded_fit(items: list[tuple[int, int]], capacity: int) -> list[list[tuple[int, int]]]:
    """binpacking.to_constant_volume(items, capacity, weight_pos=1), binpacking 2.0.1: (index, length) items."""
    packs: list[list[tuple[int, int]]] = [[]]
    fills = [0]
    for position, item in enumerate(sorted(items, key=lambda item: -item[1])):
        fits = [i for i, fill in enumerate(fills) if fill + item[1] <= capacity]
        if fits:
            target = min(fits, key=fills.__getitem__)
        elif position > 0:
            target = len(fills)
            packs.append([])
            fills.append(0)
        else:
            target = 0
        packs[target].append(item)
        fills[target] += item[1]
    return packs


def packs(lengths: Sequence[int], capacity: int) -> list[tuple[int, ...]]:
    """The lengths in each pack, in the order PackingDataset (packing_num_proc=1) makes the packs."""
    made: list[tuple[int, ...]] = []
    carried: list[tuple[int, int]] = []
    indexed = list(enumerate(lengths))
    for start in range(0, len(indexed), PACKING_CHUNK):
        chunk = least_loaded_fit(carried + indexed[start : start + PACKING_CHUNK], capacity)
        if start + PACKING_CHUNK < len(indexed):
            chunk, carried = chunk[:-1], chunk[-1]
        made += [tuple(length for _, length in pack) for pack in chunk]
    return made


def pack_sizes(lengths: Sequence[int], capacity: int) -> tuple[int, ...]:
    """Samples per pack, in MS-SWIFT's packing order."""
    return tuple(len(pack) for pack in packs(lengths, capacity))


def gradient_accumulation(global_batch: int, per_device: int, world_size: int) -> int:
    """Accumulation when the global batch counts what a device takes (packs, or samples without packing)."""
    per_step = per_device * world_size
    if global_batch % per_step:
        raise ConfigError(
            f"train.global_batch_size={global_batch} is not a multiple of per_device_batch_size x GPUs = "
            f"{per_device} x {world_size} = {per_step}; change one of them "
            f"(e.g. global batch {per_step * max(1, global_batch // per_step)})"
        )
    return global_batch // per_step


def sample_accumulation(samples_per_pack: float, global_batch: int, per_device: int, world_size: int) -> int:
    """Accumulation whose packs hold about `global_batch` samples: the nearest, at least one."""
    return max(1, math.floor(global_batch / (samples_per_pack * per_device * world_size) + 0.5))


def fitting(lengths: list[int], max_length: int, truncation_strategy: str) -> list[int]:
    """The lengths MS-SWIFT packs: longer rows left out (delete) or cut to max_length."""
    if truncation_strategy == "delete":
        return [n for n in lengths if n <= max_length]
    return [min(n, max_length) for n in lengths]


def plan_batching(train_args: TrainArgs, model: ModelSpec, train: Path, world_size: int) -> Optional[Batching]:
    """The arithmetic on the export at `train` (train.jsonl); None when there is none yet."""
    if not train.is_file():
        return None
    t = train_args
    lengths, method = sample_lengths(train, model)
    kept = fitting(lengths, t.max_length, t.truncation_strategy)
    sizes = pack_sizes(kept, t.max_length) if t.packing else (1,) * len(kept)
    unit = BatchUnit(t.batch_unit)
    if unit is BatchUnit.samples and t.packing:
        accumulation = sample_accumulation(len(kept) / len(sizes), t.global_batch_size, t.per_device_batch_size, world_size)
    else:
        accumulation = gradient_accumulation(t.global_batch_size, t.per_device_batch_size, world_size)
    return Batching(
        unit=unit,
        global_batch=t.global_batch_size,
        samples=len(lengths),
        over_length=sum(n > t.max_length for n in lengths),
        pack_sizes=sizes,
        max_length=t.max_length,
        truncation_strategy=t.truncation_strategy,
        packing=t.packing,
        world_size=world_size,
        per_device=t.per_device_batch_size,
        accumulation=accumulation,
        epochs=t.epochs,
        max_steps=t.max_steps,
        token_method=method,
    )
