"""Publishing an export on the Hugging Face Hub with `datasets` (ExportConfig.push_to_hub)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets import DatasetDict


def hub_dataset(out_dir: Path) -> DatasetDict:
    """The export as a `datasets.DatasetDict` (train, validation) whose images load from the export folder."""
    from datasets import Dataset, DatasetDict, Features, Image, List, Value  # imported lazily: about a second

    message = {"role": Value("string"), "content": Value("string"), "loss": Value("bool")}
    features = Features(
        {
            "task_id": Value("string"),
            "agent": Value("string"),
            "part": Value("int32"),
            "tools": Value("string"),
            "messages": List(message),
            "images": List(Image()),
        }
    )
    splits = {}
    for split, name in (("train", "train.jsonl"), ("validation", "val.jsonl")):
        rows = [json.loads(line) for line in (out_dir / name).read_text(encoding="utf-8").splitlines()]
        for row in rows:
            row["images"] = [str(out_dir / p) for p in row["images"]]
            row["messages"] = [{"loss": None, **m} for m in row["messages"]]
        if rows:
            splits[split] = Dataset.from_list(rows, features=features)
    return DatasetDict(splits)


def push_to_hub(out_dir: Path, repo_id: str, private: bool) -> None:
    """Upload the export with `datasets` (images embedded in the Parquet shards), then the dataset card."""
    from huggingface_hub import HfApi

    try:
        hub_dataset(out_dir).push_to_hub(repo_id, private=private)
        HfApi().upload_file(
            path_or_fileobj=str(out_dir / "README.md"), path_in_repo="README.md", repo_id=repo_id, repo_type="dataset"
        )
    except OSError as exc:
        raise RuntimeError(f"push_to_hub to {repo_id} failed: {exc}") from exc
