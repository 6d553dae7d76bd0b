"""Real deck PDFs built with PyMuPDF: pages of exact sizes carrying English or Chinese text."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from core.pdf import pymupdf

PAGE_SIZES: dict[str, tuple[float, float]] = {  # points; 1280x720 px prints as 960x540 pt
    "16:9": (960.0, 540.0),
    "4:3": (960.0, 720.0),
    "A1": (1683.8, 2383.9),
    "A2": (1190.6, 1683.8),
    "A3": (841.9, 1190.6),
    "A4": (595.3, 841.9),
    "letter": (612.0, 792.0),
}

ENGLISH = (
    "Attention mechanisms let a model weigh every input token when producing each output. "
    "This slide compares recurrent encoders with the Transformer and shows why training parallelises well."
)
CHINESE = "注意力机制让模型在生成每个输出时权衡所有输入。本页比较循环编码器与变换器模型，并说明其训练为何易于并行。"
CHINESE_WITH_ENGLISH_TERMS = (
    "Transformer 模型使用 self-attention 机制，并通过 multi-head attention 捕捉不同的依赖关系。"
    "我们在 WMT 2014 数据集上评估 BLEU 分数，结果优于循环神经网络。"
)


def write_deck(path: Path, sizes: Sequence[tuple[float, float]], texts: Sequence[str], headings: Sequence[str] = ()) -> Path:
    """One page per (size, text), under a heading in larger type when `headings` are given; the CJK-capable
    built-in font covers both scripts."""
    doc = pymupdf.open()
    for n, ((width, height), text) in enumerate(zip(sizes, texts, strict=True)):
        page = doc.new_page(width=width, height=height)
        margin = width / 12
        size = max(14.0, width / 40)
        top = margin
        if headings:
            box = pymupdf.Rect(margin, margin / 2, width - margin, margin / 2 + 5 * size)
            if page.insert_textbox(box, headings[n], fontname="china-s", fontsize=1.25 * size) < 0:
                raise ValueError(f"{path}: heading does not fit a {width}x{height} pt page: {headings[n]!r}")
            top = margin / 2 + 5.5 * size
        box = pymupdf.Rect(margin, top, width - margin, height - margin)
        if page.insert_textbox(box, text, fontname="china-s", fontsize=size) < 0:
            raise ValueError(f"{path}: text does not fit a {width}x{height} pt page: {text[:40]!r}")
    doc.save(path)
    doc.close()
    return path


def uniform_deck(path: Path, shape: str, pages: int, text: str) -> Path:
    return write_deck(path, [PAGE_SIZES[shape]] * pages, [f"{n}. {text}" for n in range(1, pages + 1)])
