"""DrawingML text that keeps Chromium's lines: one `a:p` per block, `a:br` where Chromium broke a
line, exact line spacing, and the frame placed so that each baseline lands where Chromium put it.

A line with exact spacing F sits at baseline = line top + F - d (the leading goes above the
text), where Chromium splits the leading around the text. In text frames d is a fifth of the
font size whatever the font (LibreOffice lays PPTX text frames out with font-independent line
spacing, imitating PowerPoint: measured for Noto Sans, Noto Serif and Noto Sans CJK at 16-40 px);
in table cells LibreOffice uses the font's own descent. So a paragraph whose first baseline is
B starts at B - F + d; a later paragraph of the same frame starts there after `spcBef` of the
gap left by the one before it.

LibreOffice widens each place where text changes between Asian script and another (its "apply
spacing between Asian and non-Asian text", on unless its locale is Japanese or Korean) by a
fifth of the height of the text portion that ends there, about a quarter em. A PPTX cannot turn
it off: DrawingML's paragraph properties have no such attribute (WordprocessingML's autoSpaceDE
and autoSpaceDN have no DrawingML counterpart, nor a PowerPoint option), and LibreOffice's
import sets none. Chromium adds no such space. So a zero width space of the smallest size
(1 pt) ends each such portion: LibreOffice adds about a quarter point there instead, and the
space itself draws nothing.
"""

from __future__ import annotations

import itertools
import re
import statistics
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from deck.fonts import Face, east_asian_family, face, latin_family

EMU_PER_PX = 9525
FRAME_DESCENT = 0.2  # em below the baseline, in text frames
_ALIGN = {"l": "l", "ctr": "ctr", "r": "r", "just": "l"}  # justified lines end in breaks: set as Chromium broke them
_XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# LibreOffice's script classes (i18npool BreakIteratorImpl::getScriptClass): Asian blocks, and
# weak characters that take the script before them (spaces, combining marks, general punctuation,
# symbols and most other Common or Inherited blocks); the rest is Latin or complex.
_ASIAN = re.compile(
    "[\u1100-\u11ff\u2e80-\ua4cf\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]"
)
_WEAK = re.compile(
    "[\x01\x02 \xa0\u02c7\u02ca\u02cb\u02d9\u0300-\u036f\u2000-\u27ff\u2900-\u2bff\u2e00-\u2e7f"
    "\ufe00-\ufe2f\ufe50-\ufe6f\U0001f000-\U0001faff]"
)
_SPACER = "\u200b"  # zero width space


def emu(px: float) -> int:
    return round(px * EMU_PER_PX)


def colour_xml(hex_colour: str, alpha: float = 1.0) -> str:
    inner = f'<a:alpha val="{round(alpha * 100000)}"/>' if alpha < 0.999 else ""
    return f'<a:srgbClr val="{hex_colour.upper()}">{inner}</a:srgbClr>'


@dataclass(frozen=True)
class RunFont:
    latin: Face
    east_asian: Face
    bold: bool
    italic: bool


class FontBook:
    """The slide's fonts (slide_layout.js `fonts`) resolved to the installed faces Chromium used."""

    def __init__(self, layout: dict[str, Any]):
        self.lang = layout.get("lang", "")
        webfonts = frozenset(f.lower() for f in layout.get("webfonts", []))
        self.fonts: list[RunFont] = []
        for spec in layout.get("fonts", []):
            bold, italic = spec["weight"] >= 600, bool(spec["italic"])
            latin = latin_family(spec["family"], webfonts)
            east_asian = east_asian_family(spec["family"], self.lang)
            self.fonts.append(RunFont(face(latin, bold, italic), face(east_asian, bold, italic), bold, italic))

    def __getitem__(self, index: int) -> RunFont:
        return self.fonts[index]


@dataclass(frozen=True)
class TextFrame:
    """A text frame's box (CSS px) and its paragraphs as DrawingML."""

    left: float
    top: float
    width: float
    height: float
    xml: str  # the a:p elements


def line_descent(line: dict[str, Any], book: FontBook, in_cell: bool) -> float:
    """How far below the baseline (px) the renderer ends the line: a fifth of the largest size in a
    text frame, the deepest descent of the faces the line uses in a table cell."""
    if not in_cell:
        return FRAME_DESCENT * max(run["s"] for run in line["runs"])
    return max(_face_of(book[run["f"]], ch).descent * run["s"] for run in line["runs"] for ch in run["t"])


def _face_of(font: RunFont, char: str) -> Face:
    """The face Chromium draws `char` with: the Latin one unless it lacks the glyph and the East Asian one has it."""
    return font.latin if char.isspace() or font.latin.has(char) or not font.east_asian.has(char) else font.east_asian


@dataclass(frozen=True)
class _Segment:
    """Lines of one block set at one pitch: a DrawingML paragraph."""

    lines: list[dict[str, Any]]
    breaks: list[int]  # line breaks before each line after the first (2: a blank line between)
    spacing: float  # px from baseline to baseline
    text_x: float  # where the block's lines start (its first line may start elsewhere: indent, marker)
    bullet: dict[str, Any] | None

    def extent(self) -> int:
        """Lines the segment takes, blank ones included."""
        return 1 + sum(self.breaks)


def _pitch(lines: list[dict[str, Any]], lh: float | None) -> float:
    """Baseline-to-baseline distance: the line-height, else the lines' own, else the line's height."""
    if lh:
        return lh
    if len(lines) > 1:
        return statistics.median(b["base"] - a["base"] for a, b in zip(lines, lines[1:]))
    return lines[0]["bottom"] - lines[0]["top"]


def _segments(para: dict[str, Any]) -> list[_Segment]:
    """A block's lines cut where the distance between baselines is not a whole number of pitches
    (a taller inline element, a larger span); blank lines between them are kept as breaks."""
    lines = para["lines"]
    spacing = _pitch(lines, para.get("lh"))
    text_x = min(line["x"] for line in lines[1:]) if len(lines) > 1 else lines[0]["x"]
    cuts = [0]
    breaks: list[int] = []
    for a, b in zip(lines, lines[1:]):
        steps = round((b["base"] - a["base"]) / spacing) if spacing > 0 else 0
        if steps < 1 or abs(b["base"] - a["base"] - steps * spacing) > 1.0:
            cuts.append(lines.index(b))
            breaks.append(0)
        else:
            breaks.append(steps)
    segments = []
    for k, start in enumerate(cuts):
        stop = cuts[k + 1] if k + 1 < len(cuts) else len(lines)
        part = lines[start:stop]
        own = [n for n in breaks[start : stop - 1]]
        pitch = spacing if len(cuts) == 1 else _pitch(part, para.get("lh"))
        segments.append(_Segment(part, own, pitch, text_x, para.get("bullet") if k == 0 else None))
    return segments


def frame(
    paras: list[dict[str, Any]], align: str, rect: list[float], book: FontBook, in_cell: bool = False, strict: bool = False
) -> TextFrame | None:
    """A frame holding `paras` (one or more blocks of one column). A part that starts higher than
    the one before it allows is set right below it, or with `strict` the frame is None (then each
    block needs its own)."""
    segments = [seg for p in paras for seg in _segments(p)]
    tops = [seg.lines[0]["base"] - seg.spacing + line_descent(seg.lines[0], book, in_cell) for seg in segments]
    ends = [top + seg.spacing * seg.extent() for top, seg in zip(tops, segments)]
    gaps = [0.0] + [tops[i] - ends[i - 1] for i in range(1, len(segments))]
    if strict and any(g < -0.5 for g in gaps):
        return None
    lines = [line for p in paras for line in p["lines"]]
    markers = [p["bullet"]["x"] for p in paras if p.get("bullet")]
    right = max(line["x"] + line["w"] for line in lines)
    if align == "ctr":
        centre = statistics.median(line["x"] + line["w"] / 2 for line in lines)
        width = max(rect[2], *(line["w"] + 2 for line in lines))
        left = centre - width / 2
    elif align == "r":
        left = min(rect[0], *(line["x"] for line in lines))
        width = right - left
    else:
        left = min(line["x"] for line in [*lines, *({"x": x} for x in markers)])
        width = (right - left) * 1.05 + 4  # room for a renderer whose glyphs run a little wider
    xml = "".join(_paragraph(seg, align, left, max(0.0, gap), book) for seg, gap in zip(segments, gaps))
    return TextFrame(left, tops[0], width, ends[-1] - tops[0], xml)


def _paragraph(seg: _Segment, align: str, left: float, before: float, book: FontBook) -> str:
    lines, bullet = seg.lines, seg.bullet
    attrs = f'algn="{_ALIGN[align]}"'
    if align in ("l", "just"):
        indent = (bullet["x"] if bullet else lines[0]["x"]) - seg.text_x
        attrs += f' marL="{emu(max(0.0, seg.text_x - left))}" indent="{emu(indent)}"'
    else:
        attrs += ' marL="0" indent="0"'
    props = f'<a:lnSpc><a:spcPts val="{round(seg.spacing * 75)}"/></a:lnSpc>'
    props += f'<a:spcBef><a:spcPts val="{round(before * 75)}"/></a:spcBef><a:spcAft><a:spcPts val="0"/></a:spcAft>'
    props += _bullet(bullet, lines[0], book) if bullet else "<a:buNone/>"
    cuts = _script_changes(lines)
    body = "".join(_runs(lines[0], book, cuts[0]))
    for line, count, at in zip(lines[1:], seg.breaks, cuts[1:]):
        body += _BREAK * count + "".join(_runs(line, book, at))
    end = f'<a:endParaRPr sz="{_size(lines[-1]["runs"][-1]["s"])}" dirty="0"/>'
    return f"<a:p><a:pPr {attrs}>{props}</a:pPr>{body}{end}</a:p>"


def line_paragraph(line: dict[str, Any], spacing: float, book: FontBook) -> str:
    """One centred line (rotated text), at `spacing` px."""
    props = f'<a:lnSpc><a:spcPts val="{round(spacing * 75)}"/></a:lnSpc><a:spcBef><a:spcPts val="0"/></a:spcBef><a:buNone/>'
    runs = "".join(_runs(line, book, _script_changes([line])[0]))
    return f'<a:p><a:pPr algn="ctr" marL="0" indent="0">{props}</a:pPr>{runs}</a:p>'


def _script(char: str) -> str | None:
    """LibreOffice's script class of `char`: "asian", "other", or None for a weak character."""
    return None if _WEAK.match(char) else "asian" if _ASIAN.match(char) else "other"


def _script_changes(lines: list[dict[str, Any]]) -> list[set[int]]:
    """Per line of a paragraph, where LibreOffice adds its Asian-Latin spacing: the offsets (in
    the line's text) of the characters where the script changes between Asian and another, weak
    characters counting with the script before them, or at the paragraph's start with the one
    after them (so weak text that starts a paragraph ends a script of its own). None at a line's
    start: the break before it ends no text portion."""
    changes: list[set[int]] = []
    last = None
    for line in lines:
        found = set()
        for i, char in enumerate("".join(run["t"] for run in line["runs"])):
            script = _script(char)
            if script is None:
                continue
            if i and script != last and "asian" in (script, last or script):
                found.add(i)
            last = script
        changes.append(found)
    return changes


def _runs(line: dict[str, Any], book: FontBook, cuts: set[int]) -> list[str]:
    """A line's runs, with a spacer (module docstring) before each offset of `cuts`."""
    out = []
    offset = 0
    for run in _justified(line):
        text = run["t"]
        bounds = [0, *sorted(c - offset for c in cuts if offset < c < offset + len(text)), len(text)]
        for start, end in zip(bounds, bounds[1:]):
            if offset + start in cuts:
                out.append(_spacer(run, book))
            out.append(_run({**run, "t": text[start:end]}, book))
        offset += len(text)
    return out


def _justified(line: dict[str, Any]) -> list[dict[str, Any]]:
    """A line's runs; a justified line keeps Chromium's width through wider spaces (or wider
    character spacing where it has no spaces), as its breaks keep renderers from justifying it."""
    if "jc" in line:
        return [{**run, "ls": run["ls"] + line["jc"]} for run in line["runs"]]
    if "js" not in line:
        return line["runs"]
    return [
        {**run, "t": piece, "ls": run["ls"] + (line["js"] if piece == " " else 0)}
        for run in line["runs"]
        for piece in re.split(r"( )", run["t"])
        if piece
    ]


_BREAK = '<a:br><a:rPr lang="en-US" dirty="0"/></a:br>'


def _bullet(bullet: dict[str, Any], first: dict[str, Any], book: FontBook) -> str:
    text_size = first["runs"][0]["s"]
    font = book[bullet["f"]].latin
    xml = f"<a:buClr>{colour_xml(bullet['c'], bullet['a'])}</a:buClr>"
    xml += f'<a:buSzPct val="{round(100000 * bullet["size"] / text_size)}"/>' if text_size else ""
    xml += (
        f'<a:buFont typeface={quoteattr(font.family)} panose="{font.panose}" pitchFamily="{font.pitch_family}" charset="0"/>'
        if font.panose
        else f"<a:buFont typeface={quoteattr(font.family)}/>"
    )
    if "char" in bullet:
        return xml + f"<a:buChar char={quoteattr(bullet['char'] or '•')}/>"
    return xml + f'<a:buAutoNum type="{bullet["scheme"]}" startAt="{bullet["start"]}"/>'


def _size(px: float) -> int:
    return max(100, min(400000, round(px * 75)))


def _face_xml(tag: str, font: Face) -> str:
    extra = f' panose="{font.panose}" pitchFamily="{font.pitch_family}" charset="0"' if font.panose else ""
    return f"<a:{tag} typeface={quoteattr(font.family)}{extra}/>"


def _spacer(run: dict[str, Any], book: FontBook) -> str:
    """A zero width space at 1 pt in the Latin face of `run` (the Noto faces have one, of no
    width), without the run's spacing or decoration."""
    face = book[run["f"]].latin
    faces = _face_xml("latin", face) + _face_xml("ea", face) + _face_xml("cs", face)
    return f'<a:r><a:rPr lang="{book.lang or "en-US"}" sz="100" dirty="0">{faces}</a:rPr><a:t>{_SPACER}</a:t></a:r>'


def _run(run: dict[str, Any], book: FontBook) -> str:
    """A run; a link stays styled text (LibreOffice draws a linked run as a field that lifts its line
    about 4 px), its address goes to the slide's notes. Its text is cut where Chromium changes font
    (a character the Latin font lacks comes from the East Asian one), and each piece names that
    one font for every script, so a renderer that classes a character otherwise (curly quotes,
    ellipses and dashes beside Chinese) still draws it with the font Chromium used."""
    font = book[run["f"]]
    attrs = f'lang="{book.lang or "en-US"}" sz="{_size(run["s"])}" b="{int(font.bold)}" i="{int(font.italic)}"'
    if run["u"]:
        attrs += ' u="sng"'
    if run["k"]:
        attrs += ' strike="sngStrike"'
    if run["ls"]:
        attrs += f' spc="{round(run["ls"] * 75)}"'
    if run["va"]:
        attrs += f' baseline="{30000 if run["va"] > 0 else -25000}"'
    fill = f"<a:solidFill>{colour_xml(run['c'], run['a'])}</a:solidFill>"
    text = _XML_ILLEGAL.sub("", run["t"])
    pieces = []
    for run_face, chars in itertools.groupby(text, key=lambda ch: _face_of(font, ch)):
        faces = _face_xml("latin", run_face) + _face_xml("ea", run_face) + _face_xml("cs", run_face)
        pieces.append(f'<a:r><a:rPr {attrs} dirty="0">{fill}{faces}</a:rPr><a:t>{escape("".join(chars))}</a:t></a:r>')
    return "".join(pieces)
