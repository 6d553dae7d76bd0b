"""Files to Markdown: PDFs through pymupdf4llm (NFKC text, figures as PNG files), Office files and HTML through markitdown.

Works on bytes and returns the Markdown with the images it references, largest
first; the tool layer writes them into the workspace. pymupdf4llm's layout
mode is skipped (its table and layout analysis takes seconds per page); the
plain mode keeps headings, lists, bold text and renders vector figures too.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from core.pdf import pymupdf

PDF_SUFFIXES = (".pdf",)
MARKITDOWN_SUFFIXES = (".docx", ".pptx", ".xlsx", ".html", ".htm")
OFFICE_SUFFIXES = (".docx", ".pptx", ".xlsx")  # zip archives
ZIP_MAGIC = b"PK\x03\x04"
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".csv", ".json")
SUPPORTED = PDF_SUFFIXES + MARKITDOWN_SUFFIXES
MAX_IMAGES = 60
_DATA_URI = re.compile(
    r"data:image/(?P<kind>png|jpe?g|gif|webp|bmp|tiff|x-emf|x-wmf|svg\+xml);base64,(?P<data>[A-Za-z0-9+/=\s]+)"
)
_IMAGE_REF = re.compile(r"!\[[^\]]*\]\((?P<path>[^)\s]+)\)")


class ConversionError(ValueError):
    """A file that cannot be converted; the message says why in words the model can act on."""


@dataclass(frozen=True)
class ConvertedImage:
    name: str
    data: bytes
    width: int
    height: int


@dataclass(frozen=True)
class Conversion:
    markdown: str
    images: tuple[ConvertedImage, ...]  # largest first
    pages: int | None = None


def _size(data: bytes) -> tuple[int, int]:
    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.width, img.height
    except (UnidentifiedImageError, OSError):
        return 0, 0


def _keep_largest(markdown: str, images: dict[str, bytes]) -> tuple[str, tuple[ConvertedImage, ...]]:
    """The images largest first (at most MAX_IMAGES; references to the others are dropped)."""
    sized = sorted(
        (ConvertedImage(name, data, *_size(data)) for name, data in images.items()), key=lambda i: (-i.width * i.height, i.name)
    )
    kept = tuple(sized[:MAX_IMAGES])
    names = {i.name for i in kept}
    markdown = _IMAGE_REF.sub(lambda m: m.group() if m.group("path") in names else "", markdown)
    return markdown, kept


def pdf_to_markdown(data: bytes, stem: str, with_images: bool = True) -> Conversion:
    from pymupdf4llm.helpers import pymupdf_rag  # imported on use: it takes most of a second

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise ConversionError(f"not a readable PDF ({exc})") from exc
    with doc:
        if doc.needs_pass:
            raise ConversionError("the PDF is encrypted (password-protected); it cannot be read")
        if not with_images:
            markdown = pymupdf_rag.to_markdown(doc, ignore_images=True, ignore_graphics=True, table_strategy=None, filename=stem)
            return Conversion(unicodedata.normalize("NFKC", markdown), (), len(doc))
        with tempfile.TemporaryDirectory(prefix="convert-") as folder:
            markdown = pymupdf_rag.to_markdown(
                doc, write_images=True, image_path=folder, image_format="png", table_strategy=None, filename=stem
            )
            files = {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}
            markdown = markdown.replace(f"{folder}/", "")
        pages = len(doc)
    markdown, images = _keep_largest(unicodedata.normalize("NFKC", markdown), files)
    return Conversion(markdown, images, pages)


def _extract_data_uris(markdown: str, stem: str) -> tuple[str, dict[str, bytes]]:
    """Embedded base64 images become files; the Markdown references them by name."""
    images: dict[str, bytes] = {}

    def save(m: re.Match) -> str:
        try:
            data = base64.b64decode(re.sub(r"\s", "", m.group("data")), validate=True)
        except (binascii.Error, ValueError):
            return ""
        kind = {"jpeg": "jpg", "svg+xml": "svg", "x-emf": "emf", "x-wmf": "wmf"}.get(m.group("kind"), m.group("kind"))
        name = f"{stem}-image-{len(images) + 1}.{kind}"
        images[name] = data
        return name

    return _DATA_URI.sub(save, markdown), images


def office_to_markdown(data: bytes, suffix: str, stem: str) -> Conversion:
    from markitdown import MarkItDown, MarkItDownException  # imported on use: it takes most of a second

    if suffix in OFFICE_SUFFIXES and not data.startswith(ZIP_MAGIC):
        raise ConversionError(f"cannot be read as {suffix} (an Office file is a zip archive; this one is not)")
    try:
        result = MarkItDown(enable_plugins=False).convert_stream(io.BytesIO(data), file_extension=suffix, keep_data_uris=True)
    except (MarkItDownException, ValueError, OSError, KeyError) as exc:
        raise ConversionError(f"cannot be read as {suffix} ({type(exc).__name__}: {exc})") from exc
    markdown, files = _extract_data_uris(result.markdown, stem)
    markdown, images = _keep_largest(markdown, files)
    return Conversion(markdown, images)


def convert_bytes(data: bytes, filename: str) -> Conversion:
    """Markdown (and images) of a file's bytes; its suffix picks the converter."""
    suffix, stem = Path(filename).suffix.lower(), Path(filename).stem
    if suffix in PDF_SUFFIXES:
        return pdf_to_markdown(data, stem)
    if suffix in MARKITDOWN_SUFFIXES:
        return office_to_markdown(data, suffix, stem)
    raise ConversionError(f"{suffix or 'no suffix'}: unsupported file type; supported: {', '.join(SUPPORTED)}")


def document_text(data: bytes, filename: str) -> str:
    """The text of a document for reading (no images): converted, or decoded when it is already text."""
    suffix = Path(filename).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return data.decode("utf-8", errors="replace")
    if suffix in PDF_SUFFIXES:
        return pdf_to_markdown(data, Path(filename).stem, with_images=False).markdown
    if suffix in MARKITDOWN_SUFFIXES:
        return office_to_markdown(data, suffix, Path(filename).stem).markdown
    raise ConversionError(f"{suffix or 'no suffix'}: unsupported file type; supported: {', '.join(SUPPORTED + TEXT_SUFFIXES)}")
