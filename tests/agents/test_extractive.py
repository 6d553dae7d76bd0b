"""The scripted baseline's outline: the document's own sections, whole key sentences, figures with captions, no repeats."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.policies.content import manuscript_text, outline, parse_manuscript
from agents.policies.extract import key_sentences, parse_document, sentences, textrank, whole_sentence
from agents.research.convert import pdf_to_markdown

SAMPLES = Path(__file__).parents[2] / "data" / "samples"
GENERIC = re.compile(r"^(key points?|要点)\s*\d*", re.IGNORECASE)


@pytest.fixture(scope="module")
def paper() -> str:
    return pdf_to_markdown((SAMPLES / "arxiv" / "arxiv_1409.0473.pdf").read_bytes(), "arxiv_1409.0473").markdown


@pytest.fixture(scope="module")
def notes() -> str:
    return pdf_to_markdown(
        (SAMPLES / "edu" / "edu_zh_thu-numerical-analysis-notes.pdf").read_bytes(), "notes", with_images=False
    ).markdown


def bullets(slides) -> list[str]:
    return [b for s in slides for b in s.bullets]


def test_a_paper_deck_follows_its_sections_with_whole_sentences_and_captioned_figures(paper: str) -> None:
    doc = parse_document(paper)
    assert doc.title == "NEURAL MACHINE TRANSLATION BY JOINTLY LEARNING TO ALIGN AND TRANSLATE"
    headings = [s.heading for s in doc.sections]
    assert "INTRODUCTION" in headings and "CONCLUSION" in headings and "REFERENCES" not in headings
    figures = {f.path: f.caption for s in doc.sections for f in s.figures}
    assert figures["arxiv_1409.0473-4-0.png"].startswith("Figure 2: The BLEU scores") and figures[
        "arxiv_1409.0473-4-0.png"
    ].endswith(".")
    slides = outline("ignored", "en", 6, [paper], {"arxiv_1409.0473-4-0.png": "assets/fig2.png"})
    assert len(slides) == 6 and slides[0].title == "Neural machine translation by jointly learning to align and translate"
    assert [s.title for s in slides[1:-1]] == [
        "Introduction",
        "Learning to align and translate",
        "Experiment settings",
        "Results",
    ]
    assert slides[-1].title == "Key takeaways" and slides[-1].bullets  # the conclusion's own sentences
    said = bullets(slides)
    assert len(said) == len(set(said)) and all(b[0].isupper() and b[-1] in ".!?" and "…" not in b for b in said)
    assert all(b in paper.replace("\n", " ") or b.split()[0] in paper for b in said)  # extracted, not written
    pictured = next(s for s in slides if s.image)
    assert (pictured.image, pictured.image_alt) == ("assets/fig2.png", figures["arxiv_1409.0473-4-0.png"])
    assert not any(GENERIC.match(s.title) for s in slides)
    assert [(p.title, p.bullets, p.image, p.image_alt) for p in parse_manuscript(manuscript_text(slides))] == [
        (s.title, s.bullets, s.image, s.image_alt) for s in slides
    ]


def test_a_chinese_deck_keeps_chinese_sentences_and_leaves_formulas_out(notes: str) -> None:
    slides = outline("数值分析", "zh", 6, [notes], {})
    said = bullets(slides[1:-1])
    assert slides[0].title == "数值分析" and said and len(said) == len(set(said))
    assert all(re.search(r"[\u4e00-\u9fff]", b) and b[-1] in "。！？." and not re.search(r"[=∑≤≥]", b) for b in said), said
    recap = slides[-1]  # a sentence of each part not said yet, or (nothing left to say) the parts named again
    titles = {s.title for s in slides[1:-1]}
    assert (
        recap.title == "要点回顾"
        and recap.bullets
        and all(b in titles or (b not in said and b[-1] in "。！？.") for b in recap.bullets)
    )


def test_too_few_sections_gives_a_shorter_deck_not_copies() -> None:
    doc = "# A note\n\n## Only section\n\n" + " ".join(
        f"Sentence number {w} explains one more idea about the topic here." for w in ("one", "two", "three", "four")
    )
    slides = outline("A note", "en", 8, [doc], {})
    said = bullets(slides)
    assert len(slides) < 8 and len(said) == len(set(said))


def test_sentences_and_textrank() -> None:
    assert sentences("Bahdanau et al. (2015) proposed it. It works. 注意插值。再看拟合！") == [
        "Bahdanau et al. (2015) proposed it.",
        "It works.",
        "注意插值。",
        "再看拟合！",
    ]
    assert not whole_sentence("K. Cho, and Y. Bengio. On the number of", "en") and not whole_sentence(
        "x = y + 1 holds for every case we tried here.", "en"
    )
    assert whole_sentence("An encoder neural network reads and encodes a source sentence into a fixed-length vector.", "en")
    items = ["Attention aligns source and target words.", "The decoder uses attention over source words.", "Cats sleep a lot."]
    scores = textrank(items)
    assert scores[2] < min(scores[:2])  # the sentence that shares nothing ranks last
    assert key_sentences(items, 2, taken=["The decoder uses attention over the source words."]) == [items[0], items[2]]
