"""download_file: fetch a URL into the workspace, refusing private networks at every hop (agents/web.py)."""

from __future__ import annotations

import io
import stat
from pathlib import PurePosixPath
from typing import Annotated

from PIL import Image
from pydantic import Field

from agents.tools.files import image_size
from agents.tools.registry import ROLES, Tool, ToolContext, ToolError
from agents.web import fetch


def _as_png(data: bytes) -> bytes:
    out = io.BytesIO()
    with Image.open(io.BytesIO(data)) as img:
        img.save(out, format="PNG")
    return out.getvalue()


async def download_file(
    ctx: ToolContext,
    url: Annotated[str, Field(description="An http(s) URL.")],
    path: Annotated[str, Field(description="Where to save it in the workspace (e.g. 'assets/figure.png').")],
) -> str:
    """Download a URL into the workspace. WEBP images are saved as PNG; an image's size is reported."""
    found = ctx.workspace.stat(path)  # a path outside the workspace is refused before anything is fetched
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise ToolError(f"{path!r} is a folder; name the file to save to, e.g. '{path.rstrip('/')}/image.png'")
    data, source = await fetch(url, ctx.sandbox)
    image = image_size(data)
    if image and image[0] == "WEBP":
        data, path = _as_png(data), str(PurePosixPath(path).with_suffix(".png"))
        image = ("PNG (converted from WEBP)", image[1], image[2])
    ctx.workspace.write_bytes(path, data)
    what = f"image, {image[0]}, {image[1]}x{image[2]}" if image else f"{len(data):,} bytes"
    return f"Saved {source} to {path} ({what})."


TOOLS = (Tool.from_function(download_file, *ROLES),)
