"""Image bytes in the one format every consumer reads (PNG): for a model server or a PPTX that cannot take WebP."""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO

from PIL import Image, UnidentifiedImageError


def as_png(source: Path | IO[bytes]) -> bytes:
    """The image's pixels as PNG bytes; OSError naming the source when it is not an image."""
    try:
        with Image.open(source) as image:
            out = io.BytesIO()
            image.save(out, "PNG")
            return out.getvalue()
    except (UnidentifiedImageError, ValueError) as exc:
        raise OSError(f"{source}: not an image ({exc})") from exc
