"""The editable PPTX: native PowerPoint objects from the layout Chromium computed for each slide.

Boxes become shapes (fills, linear gradients, borders, rounded corners, outer shadows), `<img>`
and CSS background images become pictures of their files cropped as the page crops them,
tables become native tables, text becomes text frames that keep Chromium's line breaks
(`deck/pptx_text.py`), and what PowerPoint has no equivalent for (SVG, canvas, filters,
transforms) becomes a picture of the element with alt text. A slide whose layout could not be
read is one full-slide picture, as `deck.pptx_mode=picture` makes every slide.
"""

from __future__ import annotations

import base64
import io
import itertools
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname
from xml.sax.saxutils import quoteattr

from PIL import Image, UnidentifiedImageError
from pptx import Presentation
from pptx.oxml import parse_xml
from pptx.slide import Slide
from pptx.util import Emu

from core.images import as_png
from deck.layout import SlideLayout
from deck.pptx_text import FontBook, colour_xml, emu, frame, line_paragraph

log = logging.getLogger(__name__)

_NS = (
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
)
_NO_STYLE_TABLE = "{2D5ABB26-0587-4C30-8999-92F81FD0307C}"  # "No Style, No Grid": nothing inherited
_PPTX_IMAGES = {"PNG", "JPEG", "GIF", "BMP", "TIFF"}
_DASH = {"dashed": "dash", "dotted": "sysDot"}
_BODY = '<a:bodyPr wrap="none" lIns="0" tIns="0" rIns="0" bIns="0" anchor="t" rtlCol="0"><a:noAutofit/></a:bodyPr><a:lstStyle/>'
_CENTRED_BODY = _BODY.replace('anchor="t"', 'anchor="ctr"')


@dataclass(frozen=True)
class SlideSource:
    """One slide to write: its layout (None in picture mode), its 1x render, its speaker notes."""

    png: Path
    layout: SlideLayout | None = None
    notes: str = ""


def write_pptx(slides: list[SlideSource], size: tuple[int, int], pptx_path: Path, workspace: Path) -> None:
    """Write the deck; assets are read only from inside `workspace`."""
    deck = Presentation()
    deck.slide_width, deck.slide_height = Emu(emu(size[0])), Emu(emu(size[1]))
    for number, source in enumerate(slides, 1):
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        layout = source.layout
        if layout is None or layout.error:
            reason = f" (its layout could not be read: {layout.error})" if layout and layout.error else ""
            picture = pptx_image(io.BytesIO(source.png.read_bytes()))  # a WebP render, as PNG
            _picture(slide, _Ids(), picture, (0, 0, *size), None, f"Slide {number}{reason}", f"Slide {number}")
        else:
            _SlideWriter(slide, layout, workspace.resolve()).write()
        notes = "\n\n".join(part for part in (source.notes, _links(layout.data if layout else {})) if part)
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    pptx_path.parent.mkdir(parents=True, exist_ok=True)
    partial = pptx_path.with_name(f".{pptx_path.name}.part")
    deck.save(str(partial))
    partial.replace(pptx_path)


class _Ids:
    """Shape ids of one slide (1 is the slide's shape tree)."""

    def __init__(self) -> None:
        self.last = 1

    def next(self) -> int:
        self.last += 1
        return self.last


class _SlideWriter:
    def __init__(self, slide: Slide, layout: SlideLayout, workspace: Path):
        self.slide, self.data, self.shots, self.workspace = slide, layout.data, layout.shots, workspace
        self.book = FontBook(self.data)
        self.ids = _Ids()

    def write(self) -> None:
        self._background(self.data["background"])
        for group in _groups(self.data["items"]):
            kind = group[0]["type"]
            if kind == "text":
                self._text(group)
            elif kind == "box":
                self._box(group[0])
            elif kind == "image":
                self._image(group[0])
            elif kind == "shot" and group[0]["id"] in self.shots:
                item = group[0]
                _picture(
                    self.slide,
                    self.ids,
                    io.BytesIO(self.shots[item["id"]]),
                    item["rect"],
                    None,
                    item["alt"] or f"Picture of {item['name']}",
                    item["name"],
                )
            elif kind == "table":
                self._table(group[0])
            elif kind == "rotated":
                self._rotated(group[0])

    def _add(self, xml: str) -> None:
        tree = self.slide.shapes._spTree
        tree.insert_element_before(parse_xml(xml), "p:extLst")

    def _background(self, background: dict[str, Any]) -> None:
        fill = (
            _gradient_xml(background["gradient"])
            if background.get("gradient")
            else f"<a:solidFill>{colour_xml(background['fill'])}</a:solidFill>"
        )
        bg = parse_xml(f"<p:bg {_NS}><p:bgPr>{fill}<a:effectLst/></p:bgPr></p:bg>")
        self.slide._element.cSld.insert(0, bg)

    def _text(self, group: list[dict[str, Any]]) -> None:
        """A frame for consecutive blocks of one column, else one frame per block."""
        first = group[0]
        tf = frame([p for item in group for p in item["paras"]], first["align"], first["rect"], self.book, strict=len(group) > 1)
        if tf is None:
            for item in group:
                self._text([item])
            return
        name = " + ".join(dict.fromkeys(item["name"] for item in group))
        self._add(
            f'<p:sp {_NS}><p:nvSpPr><p:cNvPr id="{self.ids.next()}" name={quoteattr("Text: " + name)}/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
            f'<p:spPr>{_xfrm(tf.left, tf.top, tf.width, tf.height)}<a:prstGeom prst="rect"><a:avLst/></a:prstGeom><a:noFill/></p:spPr>'
            f"<p:txBody>{_BODY}{tf.xml}</p:txBody></p:sp>"
        )

    def _rotated(self, item: dict[str, Any]) -> None:
        """Rotated text (an SVG axis label): one centred line in a frame turned about its centre."""
        x, y, w, h = item["rect"]
        size = max(run["s"] for run in item["runs"])
        length, height = item["length"] + 4, 1.2 * size
        paragraph = line_paragraph({"runs": item["runs"]}, height, self.book)
        self._add(
            f'<p:sp {_NS}><p:nvSpPr><p:cNvPr id="{self.ids.next()}" name={quoteattr("Text: " + item["name"])}/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
            f'<p:spPr><a:xfrm rot="{round(item["angle"] * 60000)}"><a:off x="{emu(x + w / 2 - length / 2)}" y="{emu(y + h / 2 - height / 2)}"/>'
            f'<a:ext cx="{emu(length)}" cy="{emu(height)}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom><a:noFill/></p:spPr>'
            f"<p:txBody>{_CENTRED_BODY}{paragraph}</p:txBody></p:sp>"
        )

    def _box(self, item: dict[str, Any]) -> None:
        x, y, w, h = item["rect"]
        border = item.get("border")
        inset = border["w"] / 2 if border else 0.0
        fill = (
            _gradient_xml(item["gradient"], item.get("opacity", 1.0))
            if item.get("gradient")
            else f"<a:solidFill>{colour_xml(item['fill'], item['alpha'])}</a:solidFill>"
            if item.get("fill")
            else "<a:noFill/>"
        )
        line = "<a:ln><a:noFill/></a:ln>"
        if border:
            dash = f'<a:prstDash val="{_DASH[border["style"]]}"/>' if border["style"] in _DASH else ""
            line = f'<a:ln w="{emu(border["w"])}"><a:solidFill>{colour_xml(border["color"], border["alpha"])}</a:solidFill>{dash}</a:ln>'
        effect = _shadow_xml(item["shadow"]) if item.get("shadow") else "<a:effectLst/>"
        geometry = _geometry(
            w - 2 * inset, h - 2 * inset, max(0.0, (item.get("radius") or 0) - inset), item.get("ellipse", False)
        )
        self._add(
            f'<p:sp {_NS}><p:nvSpPr><p:cNvPr id="{self.ids.next()}" name={quoteattr("Box: " + item["name"])}/><p:cNvSpPr/><p:nvPr/></p:nvSpPr>'
            f"<p:spPr>{_xfrm(x + inset, y + inset, w - 2 * inset, h - 2 * inset)}{geometry}{fill}{line}{effect}</p:spPr></p:sp>"
        )

    def _image(self, item: dict[str, Any]) -> None:
        source = self._image_file(item["src"])
        if source is None:
            return
        ix, iy, iw, ih = item["image"]
        cx, cy, cw, ch = item["rect"]
        left, top = max(ix, cx, 0.0), max(iy, cy, 0.0)
        right = min(ix + iw, cx + cw, float(self.data["size"][0]))
        bottom = min(iy + ih, cy + ch, float(self.data["size"][1]))
        if right - left < 0.5 or bottom - top < 0.5 or iw <= 0 or ih <= 0:
            return
        crop = ((left - ix) / iw, (top - iy) / ih, (ix + iw - right) / iw, (iy + ih - bottom) / ih)
        name = Path(unquote(urlparse(item["src"]).path)).name or "image"
        pic = _picture(
            self.slide,
            self.ids,
            source,
            (left, top, right - left, bottom - top),
            crop,
            item["alt"] or name,
            f"Image: {name}",
            item.get("alpha", 1.0),
        )
        if item.get("radius"):
            radius = min(item["radius"], (right - left) / 2, (bottom - top) / 2)
            geometry = pic.find(".//{http://schemas.openxmlformats.org/drawingml/2006/main}prstGeom")
            geometry.getparent().replace(
                geometry, parse_xml(f"<a:x {_NS}>{_geometry(right - left, bottom - top, radius, False)}</a:x>")[0]
            )

    def _image_file(self, src: str) -> Path | io.BytesIO | None:
        """The image's file (inside the workspace), as a format PowerPoint reads."""
        url = urlparse(src)
        try:
            if url.scheme == "data":
                raw = io.BytesIO(
                    base64.b64decode(src.split(",", 1)[1])
                    if ";base64" in src.split(",", 1)[0]
                    else unquote(src.split(",", 1)[1]).encode()
                )
            elif url.scheme == "file":
                path = Path(url2pathname(url.path)).resolve()
                if not path.is_relative_to(self.workspace) or not path.is_file():
                    log.warning("image %s is outside the workspace %s or missing; left out of the PPTX", path, self.workspace)
                    return None
                raw = io.BytesIO(path.read_bytes())
            else:
                return None
            return pptx_image(raw)
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            log.warning("image %s cannot be read (%s); left out of the PPTX", src[:200], exc)
            return None

    def _table(self, item: dict[str, Any]) -> None:
        cols, rows = item["cols"], item["rows"]
        grid: list[list[str | None]] = [[None] * len(cols) for _ in rows]
        for cell in item["cells"]:
            r, c, rs, cs = cell["r"], cell["c"], cell["rs"], cell["cs"]
            if grid[r][c] is not None:
                continue
            for i in range(r, r + rs):
                for j in range(c, c + cs):
                    if (i, j) != (r, c):
                        merge = (' hMerge="1"' if j > c else "") + (' vMerge="1"' if i > r else "")
                        grid[i][j] = f"<a:tc{merge}>{_EMPTY_CELL}</a:tc>"
            top, left = item["y"] + sum(rows[:r]), item["x"] + sum(cols[:c])
            grid[r][c] = self._cell(cell, left, top, sum(cols[c : c + cs]), sum(rows[r : r + rs]))
        body = "".join(
            f'<a:tr h="{emu(h)}">' + "".join(tc or f"<a:tc>{_EMPTY_CELL}</a:tc>" for tc in row) + "</a:tr>"
            for h, row in zip(rows, grid)
        )
        columns = "".join(f'<a:gridCol w="{emu(w)}"/>' for w in cols)
        self._add(
            f'<p:graphicFrame {_NS}><p:nvGraphicFramePr><p:cNvPr id="{self.ids.next()}" name={quoteattr("Table: " + item["name"])}/>'
            '<p:cNvGraphicFramePr><a:graphicFrameLocks noGrp="1"/></p:cNvGraphicFramePr><p:nvPr/></p:nvGraphicFramePr>'
            f'<p:xfrm><a:off x="{emu(item["x"])}" y="{emu(item["y"])}"/><a:ext cx="{emu(sum(cols))}" cy="{emu(sum(rows))}"/></p:xfrm>'
            '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table">'
            f'<a:tbl><a:tblPr firstRow="0" bandRow="0"><a:tableStyleId>{_NO_STYLE_TABLE}</a:tableStyleId></a:tblPr>'
            f"<a:tblGrid>{columns}</a:tblGrid>{body}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>"
        )

    def _cell(self, cell: dict[str, Any], left: float, top: float, width: float, height: float) -> str:
        span = (f' gridSpan="{cell["cs"]}"' if cell["cs"] > 1 else "") + (f' rowSpan="{cell["rs"]}"' if cell["rs"] > 1 else "")
        margins = [0.0, cell["pad"][1], 0.0, cell["pad"][3]]  # top, right, bottom, left
        paragraphs = '<a:p><a:endParaRPr dirty="0"/></a:p>'
        text = cell["text"]
        tf = frame(text["paras"], text["align"], text["rect"], self.book, in_cell=True) if text else None
        if tf is not None:
            paragraphs = tf.xml
            margins[0] = max(0.0, tf.top - top)
            if text["align"] in ("l", "just"):
                margins[3], margins[1] = max(0.0, tf.left - left), 0.0
            elif text["align"] == "r":
                margins[3], margins[1] = 0.0, max(0.0, left + width - (tf.left + tf.width))
        borders = "".join(
            _cell_line(tag, cell["borders"][key]) for tag, key in (("lnL", "l"), ("lnR", "r"), ("lnT", "t"), ("lnB", "b"))
        )
        fill = f"<a:solidFill>{colour_xml(cell['fill'], cell['alpha'])}</a:solidFill>" if cell["fill"] else "<a:noFill/>"
        mar = " ".join(f'{k}="{emu(v)}"' for k, v in zip(("marT", "marR", "marB", "marL"), margins))
        return f'<a:tc{span}><a:txBody><a:bodyPr/><a:lstStyle/>{paragraphs}</a:txBody><a:tcPr {mar} anchor="t">{borders}{fill}</a:tcPr></a:tc>'


_EMPTY_CELL = '<a:txBody><a:bodyPr/><a:lstStyle/><a:p><a:endParaRPr dirty="0"/></a:p></a:txBody><a:tcPr/>'


def _groups(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Items in paint order; consecutive text blocks of one parent and one column grouped."""
    group: list[dict[str, Any]] = []
    for item in items:
        if group and _same_column(group[-1], item):
            group.append(item)
            continue
        if group:
            yield group
        group = [item]
    if group:
        yield group


def _same_column(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["type"] == b["type"] == "text"
        and a.get("parent", -1) == b.get("parent", -2)
        and a["align"] == b["align"]
        and abs(a["rect"][0] - b["rect"][0]) <= 1
        and abs(a["rect"][2] - b["rect"][2]) <= 1
        and b["paras"][0]["lines"][0]["top"] >= a["paras"][-1]["lines"][-1]["bottom"] - 1
    )


def _links(data: dict[str, Any]) -> str:
    """The slide's links, one per line ("text: address"): the PPTX keeps linked text as styled text."""
    found: dict[tuple[str, str], None] = {}
    texts = [item for item in data.get("items", []) if item["type"] == "text"]
    texts += [cell["text"] for item in data.get("items", []) if item["type"] == "table" for cell in item["cells"] if cell["text"]]
    for text in texts:
        for para in text["paras"]:
            runs = [run for line in para["lines"] for run in line["runs"]]
            for href, group in itertools.groupby(runs, key=lambda run: run.get("href")):
                if href:
                    found[("".join(run["t"] for run in group).strip(), href)] = None
    return "\n".join(["Links:", *(f"{text}: {href}" for text, href in found)]) if found else ""


def _cell_line(tag: str, border: dict[str, Any] | None) -> str:
    if border is None or border["alpha"] <= 0:
        return f'<a:{tag} w="0"><a:noFill/></a:{tag}>'
    return f'<a:{tag} w="{emu(border["w"])}"><a:solidFill>{colour_xml(border["color"], border["alpha"])}</a:solidFill></a:{tag}>'


def _xfrm(x: float, y: float, w: float, h: float) -> str:
    return f'<a:xfrm><a:off x="{emu(x)}" y="{emu(y)}"/><a:ext cx="{max(1, emu(w))}" cy="{max(1, emu(h))}"/></a:xfrm>'


def _geometry(w: float, h: float, radius: float, ellipse: bool) -> str:
    if ellipse:
        return '<a:prstGeom prst="ellipse"><a:avLst/></a:prstGeom>'
    if radius <= 0 or min(w, h) <= 0:
        return '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom>'
    adj = min(50000, round(100000 * radius / min(w, h)))
    return f'<a:prstGeom prst="roundRect"><a:avLst><a:gd name="adj" fmla="val {adj}"/></a:avLst></a:prstGeom>'


def _gradient_xml(gradient: dict[str, Any], opacity: float = 1.0) -> str:
    """A CSS linear-gradient as DrawingML: CSS 0deg points up, DrawingML 0 points right."""
    stops = "".join(
        f'<a:gs pos="{round(100000 * min(1.0, max(0.0, pos)))}">{colour_xml(c, a * opacity)}</a:gs>'
        for pos, c, a in gradient["stops"]
    )
    angle = round(((gradient["angle"] - 90) % 360) * 60000)
    return f'<a:gradFill rotWithShape="1"><a:gsLst>{stops}</a:gsLst><a:lin ang="{angle}" scaled="0"/></a:gradFill>'


def _shadow_xml(shadow: dict[str, Any]) -> str:
    distance = math.hypot(shadow["x"], shadow["y"])
    direction = round((math.degrees(math.atan2(shadow["y"], shadow["x"])) % 360) * 60000)
    return (
        f'<a:effectLst><a:outerShdw blurRad="{emu(shadow["blur"])}" dist="{emu(distance)}" dir="{direction}" algn="ctr" rotWithShape="0">'
        f"{colour_xml(shadow['color'], shadow['alpha'])}</a:outerShdw></a:effectLst>"
    )


def pptx_image(raw: io.BytesIO) -> io.BytesIO:
    """The image as a format PowerPoint and python-pptx embed (WebP and the rest become PNG, the same pixels)."""
    with Image.open(raw) as img:
        embeddable = img.format in _PPTX_IMAGES
    raw.seek(0)
    return raw if embeddable else io.BytesIO(as_png(raw))


def _picture(
    slide: Slide,
    ids: _Ids,
    image: str | Path | io.BytesIO,
    rect: tuple[float, ...] | list[float],
    crop: tuple[float, float, float, float] | None,
    alt: str,
    name: str,
    alpha: float = 1.0,
) -> Any:
    """A picture shape: the image's file embedded once per deck, cropped to the part that shows."""
    _, rid = slide.part.get_or_add_image_part(image if not isinstance(image, Path) else str(image))
    x, y, w, h = rect
    src = ""
    if crop and any(v > 1e-4 for v in crop):
        src = "<a:srcRect " + " ".join(f'{k}="{round(v * 100000)}"' for k, v in zip("ltrb", crop)) + "/>"
    fade = f'<a:alphaModFix amt="{round(alpha * 100000)}"/>' if alpha < 0.999 else ""
    xml = (
        f'<p:pic {_NS}><p:nvPicPr><p:cNvPr id="{ids.next()}" name={quoteattr(name)} descr={quoteattr(alt)}/>'
        '<p:cNvPicPr><a:picLocks noChangeAspect="1"/></p:cNvPicPr><p:nvPr/></p:nvPicPr>'
        f'<p:blipFill><a:blip r:embed="{rid}">{fade}</a:blip>{src}<a:stretch><a:fillRect/></a:stretch></p:blipFill>'
        f'<p:spPr>{_xfrm(x, y, w, h)}<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr></p:pic>'
    )
    pic = parse_xml(xml)
    slide.shapes._spTree.insert_element_before(pic, "p:extLst")
    return pic
