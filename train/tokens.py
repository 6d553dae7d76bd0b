"""Token counts of MS-SWIFT samples: the real template when processor files are at hand, else an estimate.

`TemplateCounter` encodes a row exactly as `swift sft` will (template, agent
template, loss scale, image expansion), so its totals and trained-token counts
are the training figures. `EstimateCounter` needs nothing but the text and the
image sizes: about 4 ASCII characters or 1.5 other characters per token, and the
image tokens of GLM-4V's image grid (patch 14, merge 2). Every report says which
one counted.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, TypeGuard

from PIL import Image

from core.protocols import TokenCounter
from core.seams.tokens import TokenCount
from train.config import SWIFT_TEMPLATE

ASCII_CHARS_PER_TOKEN = 4.0
OTHER_CHARS_PER_TOKEN = 1.5
MESSAGE_OVERHEAD = 4  # role tokens and separators per message
LOSS_SCALE = "default+ignore_empty_think"  # what `swift sft` uses for the GLM templates
PROCESSOR_FILES = ("tokenizer.json", "tokenizer_config.json")

log = logging.getLogger(__name__)


def has_processor(model_dir: Optional[str | Path]) -> TypeGuard[str | Path]:
    return model_dir is not None and any((Path(model_dir) / name).is_file() for name in PROCESSOR_FILES)


def text_tokens(text: str) -> int:
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN + (len(text) - ascii_chars) / OTHER_CHARS_PER_TOKEN)


def glm4v_image_tokens(
    width: int, height: int, patch: int = 14, merge: int = 2, min_pixels: int = 112 * 112, max_pixels: int = 28 * 28 * 15_000
) -> int:
    """Image tokens of one image in GLM-4V (Glm4vImageProcessor's smart_resize, two frames), plus begin/end."""
    factor = patch * merge
    h, w = max(round(height / factor), 1) * factor, max(round(width / factor), 1) * factor
    if 2 * h * w > max_pixels:
        beta = math.sqrt(2 * height * width / max_pixels)
        h, w = max(factor, math.floor(height / beta / factor) * factor), max(factor, math.floor(width / beta / factor) * factor)
    elif 2 * h * w < min_pixels:
        beta = math.sqrt(min_pixels / (2 * height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return (h // patch) * (w // patch) // (merge * merge) + 2


class EstimateCounter:
    method = "estimate (4 ASCII / 1.5 other characters per token; GLM-4V image grid)"

    def count(self, row: dict[str, Any]) -> TokenCount:
        total = text_tokens(row.get("tools") or "")
        trained = 0
        for message in row["messages"]:
            n = text_tokens(message["content"]) + MESSAGE_OVERHEAD
            total += n
            if message["role"] in ("assistant", "tool_call") and message.get("loss", True) is not False:
                trained += n
        image_tokens = 0
        for path in row["images"]:
            with Image.open(path) as image:
                image_tokens += glm4v_image_tokens(*image.size)
        return TokenCount(total + image_tokens, trained, image_tokens)


def count_rows(path: Path, counter: TokenCounter) -> list[tuple[dict[str, Any], TokenCount]]:
    """Each row of an exported JSONL with its count, its images resolved against the file's folder;
    ValueError naming the file and line of a row that cannot be counted."""
    counted = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            row["images"] = [str(path.parent / image) for image in row["images"]]
            counted.append((row, counter.count(row)))
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise ValueError(f"{path}:{number}: cannot count its tokens ({exc})") from exc
    return counted


@contextmanager
def image_root(folder: Path) -> Iterator[None]:
    """Resolve relative image paths against `folder`, as ROOT_IMAGE_DIR does for `swift sft`."""
    previous = os.environ.get("ROOT_IMAGE_DIR")
    os.environ["ROOT_IMAGE_DIR"] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("ROOT_IMAGE_DIR", None)
        else:
            os.environ["ROOT_IMAGE_DIR"] = previous


class TemplateCounter:
    """MS-SWIFT's own encoding (needs the train extra and local processor files)."""

    def __init__(self, model_dir: str | Path, template: str = SWIFT_TEMPLATE, agent_template: str = "glm4_5"):
        from swift import get_processor, get_template

        import train.swift_plugin  # noqa: F401 - registers SWIFT_TEMPLATE

        try:
            processor = get_processor(str(model_dir), download_model=False)
        except (OSError, ValueError) as exc:
            raise ValueError(f"no usable processor in {model_dir}: {exc}") from exc
        self.processor, self.template_type, self.agent_template = processor, template, agent_template
        self.template = get_template(processor, template_type=template, agent_template=agent_template, loss_scale=LOSS_SCALE)
        self.template.set_mode("train")
        self.template.max_length = None  # count every token; never raise or cut
        tokenizer = getattr(processor, "tokenizer", processor)
        self.image_token_id = tokenizer.convert_tokens_to_ids("<|image|>")
        self.method = f"template {template} + agent template {agent_template}, processor from {model_dir}"

    def encode(self, row: dict[str, Any]) -> dict[str, Any]:
        return self.template.encode(copy.deepcopy(row))  # encoding merges messages in place

    def count(self, row: dict[str, Any]) -> TokenCount:
        return self.count_encoded(self.encode(row))

    def count_encoded(self, encoded: dict[str, Any]) -> TokenCount:
        ids, labels = encoded["input_ids"], encoded["labels"]
        return TokenCount(len(ids), sum(1 for label in labels if label != -100), ids.count(self.image_token_id))


def make_counter(model_dir: Optional[str | Path], template: str, agent_template: str) -> TokenCounter:
    """The template counter when `model_dir` holds processor files, else the estimate."""
    if not has_processor(model_dir):
        return EstimateCounter()
    if importlib.util.find_spec("swift") is None:
        log.warning("processor files in %s, but MS-SWIFT (the train extra) is not installed: estimating tokens", model_dir)
        return EstimateCounter()
    return TemplateCounter(model_dir, template, agent_template)
