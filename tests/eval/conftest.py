"""Shared assets of the eval tests: decks exported without a browser, slide images, a tiny image encoder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from core.pdf import pymupdf
import pytest
from PIL import Image, ImageDraw

from core.records import Constraints, Rollout, Task
from fakes.decks import PAGE_SIZES, write_deck
from core.run.usage import RoleUsage

ENGLISH = "Attention lets a model weigh every input token; training parallelises across the sequence and scales well."
CHINESE = "注意力机制让模型在生成每个输出时权衡所有输入，训练可以在整个序列上并行进行。"


def export_workspace(
    root: Path,
    task_id: str,
    shape: str,
    texts: Sequence[str],
    defects: dict[int, list[dict]] | None = None,
    headings: Sequence[str] = (),
) -> Rollout:
    """rollouts/<task_id>/ as an exported deck leaves it (deck.pdf, previews/, deck_defects.json), and its Rollout."""
    workspace = root / "rollouts" / task_id
    (workspace / "previews").mkdir(parents=True)
    pdf = write_deck(workspace / "deck.pdf", [PAGE_SIZES[shape]] * len(texts), texts, headings)
    slides = []
    with pymupdf.open(pdf) as doc:
        for number, page in enumerate(doc, start=1):
            png = f"previews/slide_{number:02d}.png"
            page.get_pixmap().save(workspace / png)
            slides.append({"file": f"slides/slide_{number:02d}.html", "png": png, "defects": (defects or {}).get(number, [])})
    (workspace / "deck_defects.json").write_text(json.dumps({"aspect": shape, "slides": slides}))
    artifacts = {"pdf": f"rollouts/{task_id}/deck.pdf", "defects": f"rollouts/{task_id}/deck_defects.json"}
    return Rollout(
        task_id=task_id,
        status="done",
        artifacts=artifacts,
        usage={"agent": RoleUsage(calls=1, prompt_tokens=900, completion_tokens=100, cost_usd=0.02)},
    )


def task(
    task_id: str,
    source: str = "persona",
    language: str = "en",
    slides: int | None = None,
    aspect: str | None = None,
    explicit_language: str | None = None,
) -> Task:
    return Task(
        task_id,
        source,
        "Make a deck about attention.",
        language,
        constraints=Constraints(slides, slides, aspect, explicit_language),
    )


def slide_image(
    path: Path, colour: tuple[int, int, int] = (255, 255, 255), boxes: Sequence[tuple[int, int, int, int, str]] = ()
) -> Path:
    """A 320x180 slide: a background and coloured boxes (x0, y0, x1, y1, colour)."""
    img = Image.new("RGB", (320, 180), colour)
    draw = ImageDraw.Draw(img)
    for x0, y0, x1, y1, fill in boxes:
        draw.rectangle((x0, y0, x1, y1), fill=fill)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)
    return path


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised DINOv2 (2 layers, width 32) and its image processor, saved locally: no download."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    folder = tmp_path_factory.mktemp("tiny-dinov2")
    config = Dinov2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=56, patch_size=14
    )
    Dinov2Model(config).save_pretrained(folder)
    BitImageProcessor(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}).save_pretrained(folder)
    return folder
