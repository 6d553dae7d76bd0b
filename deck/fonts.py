"""Which installed fonts Chromium drew a CSS font-family list with, and their metrics.

Chromium on Linux resolves fonts through fontconfig: the first family of the list that is
installed (generic names through fontconfig's aliases; none installed: the sans-serif font)
draws Latin text; characters it lacks, such as Chinese, come from the first named family of the
list that has them, else from fontconfig's fallback for the page's language (`lang="zh-CN"`:
Noto Sans CJK SC; no lang, "en" or "zh": Noto Sans CJK JP here; checked with CDP's
CSS.getPlatformFontsForNode on a fresh browser, which caches its fallback per character). The
PPTX names the same fonts (`a:latin`, `a:ea`), with PANOSE and pitch-family so a machine
without them picks a font of similar shape and metrics.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass

from fontTools.ttLib import TTFont

GENERIC = {
    "serif",
    "sans-serif",
    "monospace",
    "cursive",
    "fantasy",
    "system-ui",
    "ui-sans-serif",
    "ui-serif",
    "ui-monospace",
    "ui-rounded",
    "math",
    "emoji",
    "fangsong",
}
_CJK_PROBE = "4e00"  # fontconfig charset of 一


@dataclass(frozen=True)
class Face:
    """A font as the PPTX names it, with what a renderer needs to place its lines."""

    family: str
    descent: float  # below the baseline, in em (hhea), as LibreOffice and Chromium lay lines out
    panose: str  # 20 hex digits, "" when unknown
    pitch_family: int  # OOXML pitchFamily: family class in the high nibble, pitch in the low bits
    chars: frozenset[int] = frozenset()  # the code points it has glyphs for (empty: unknown)

    def has(self, char: str) -> bool:
        return not self.chars or ord(char) in self.chars


def _fc(*args: str) -> str:
    if shutil.which("fc-match") is None:
        raise RuntimeError("fontconfig (fc-match, fc-list) is not installed: Debian fontconfig")
    return subprocess.run(["fc-" + args[0], *args[1:]], capture_output=True, text=True, check=True, timeout=30).stdout


@functools.cache
def _installed() -> dict[str, str]:
    """Installed family names, lowercased -> as fontconfig spells them."""
    names: dict[str, str] = {}
    for line in _fc("list", ":", "family").splitlines():
        for name in line.split(","):
            names.setdefault(name.strip().lower(), name.strip())
    return names


@functools.cache
def _cjk_families() -> frozenset[str]:
    return frozenset(
        n.strip().lower() for line in _fc("list", f":charset={_CJK_PROBE}", "family").splitlines() for n in line.split(",")
    )


@functools.cache
def _match(pattern: str) -> str:
    return _fc("match", "-f", "%{family[0]}", pattern).strip()


def families(css: str) -> list[str]:
    """The names of a CSS font-family value, unquoted."""
    return [name.strip().strip("\"'").strip() for name in css.split(",") if name.strip().strip("\"'").strip()]


def latin_family(css: str, webfonts: frozenset[str] = frozenset()) -> str:
    """The family Chromium draws Latin text of `css` with."""
    for name in families(css):
        if name.lower() in GENERIC:
            return _match(name)
        if name.lower() in webfonts:
            return name
        if name.lower() in _installed():
            return _installed()[name.lower()]
    return _match("sans-serif")


def east_asian_family(css: str, lang: str) -> str:
    """The family Chromium draws CJK characters of `css` with, for a page in `lang`."""
    for name in families(css):
        if name.lower() in _cjk_families():
            return _installed()[name.lower()]
    region = lang.strip().lower()
    return _match(f":lang={region}:charset={_CJK_PROBE}" if region else f":charset={_CJK_PROBE}")


@functools.cache
def face(family: str, bold: bool = False, italic: bool = False) -> Face:
    """Metrics and classification of an installed family (a web font or missing one: Noto Sans-like guesses)."""
    pattern = f"{family}:weight={'bold' if bold else 'regular'}:slant={'italic' if italic else 'roman'}"
    found = _fc("match", "-f", "%{family[0]}|%{file}|%{index}", pattern).strip().split("|")
    if len(found) != 3 or found[0].lower() != family.lower():
        return Face(family, 0.293, "", 0x22)
    font = TTFont(found[1], fontNumber=int(found[2] or 0), lazy=True)
    try:
        descent = -font["hhea"].descent / font["head"].unitsPerEm
        os2 = font["OS/2"] if "OS/2" in font else None
        panose = (
            bytes(
                getattr(os2.panose, f)
                for f in (
                    "bFamilyType",
                    "bSerifStyle",
                    "bWeight",
                    "bProportion",
                    "bContrast",
                    "bStrokeVariation",
                    "bArmStyle",
                    "bLetterForm",
                    "bMidline",
                    "bXHeight",
                )
            )
            .hex()
            .upper()
            if os2
            else ""
        )
        monospace = bool(os2 and os2.panose.bProportion == 9) or font["post"].isFixedPitch
        serif = bool(os2 and 2 <= os2.panose.bSerifStyle <= 10)
        chars = frozenset(font.getBestCmap() or ())
    finally:
        font.close()
    family_class = 0x30 if monospace else 0x10 if serif else 0x20
    return Face(found[0], descent, "" if panose == "00" * 10 else panose, family_class | (1 if monospace else 2), chars)
