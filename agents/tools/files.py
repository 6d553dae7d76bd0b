"""File tools: read, write, edit, move, create and list files inside the workspace."""

from __future__ import annotations

import io
from typing import Annotated, Literal, Optional

from PIL import Image, UnidentifiedImageError
from pydantic import Field

from agents.tools.registry import ROLES, Tool, ToolContext, ToolError
from core.seams.steps import Observation

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
MAX_LISTED = 500

WorkspacePath = Annotated[str, Field(description="A path inside the workspace, relative to it (e.g. 'assets/chart.png').")]


def image_size(data: bytes) -> tuple[str, int, int] | None:
    """(format, width, height) of image bytes, or None when they are not an image."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.format or "?", img.width, img.height
    except (UnidentifiedImageError, OSError):
        return None


def _encoded(ctx: ToolContext, content: str) -> bytes:
    data = content.encode()
    if len(data) > ctx.sandbox.max_write_bytes:
        raise ToolError(
            f"The content is {len(data):,} bytes; one write may hold at most {ctx.sandbox.max_write_bytes:,}. Write it in parts (mode='append')."
        )
    return data


async def read_file(
    ctx: ToolContext,
    path: WorkspacePath,
    offset: Annotated[int, Field(ge=0, description="Character offset to start reading at.")] = 0,
    length: Annotated[
        Optional[int], Field(ge=1, description="Characters to read (default and maximum: the observation limit).")
    ] = None,
) -> Observation:
    """Read a text file, a page at a time (offset/length in characters), or look at an image file."""
    if path.lower().endswith(IMAGE_SUFFIXES):
        found = image_size(ctx.workspace.read_bytes(path, ctx.sandbox.max_read_bytes))
        if found is None:
            raise ToolError(f"{path!r} is not a readable image.")
        fmt, width, height = found
        return Observation(f"Image {path} ({fmt}, {width}x{height})", images=(str(ctx.workspace.resolve(path)),))
    limit = ctx.sandbox.max_output_chars
    length = min(length or limit, limit)
    with ctx.workspace.open_read(path) as handle:
        if b"\0" in handle.read(8192):
            raise ToolError(f"{path!r} is a binary file; read_file reads text and images only.")
        handle.seek(0)
        text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace")
        skipped = 0
        while skipped < offset and (chunk := text.read(min(offset - skipped, 1 << 16))):
            skipped += len(chunk)
        page = text.read(length)
        more = bool(text.read(1))
    if not page:
        return Observation(
            f"{path}: offset {offset} is past the end of the file." if offset else f"{path} is empty.", is_error=bool(offset)
        )
    end = offset + len(page)
    tail = f"\n[characters {offset}-{end}; more follows: read_file(path={path!r}, offset={end})]" if more else ""
    return Observation(page + tail)


async def write_file(
    ctx: ToolContext,
    path: WorkspacePath,
    content: Annotated[str, Field(description="The text to write.")],
    mode: Annotated[
        Literal["write", "append"], Field(description="'write' replaces the file, 'append' adds to its end.")
    ] = "write",
) -> str:
    """Write text to a file (parent folders are created)."""
    data = _encoded(ctx, content)
    ctx.workspace.write_bytes(path, data, mode=mode)
    return f"{'Appended' if mode == 'append' else 'Wrote'} {len(data):,} bytes to {path}."


async def edit_file(
    ctx: ToolContext,
    path: WorkspacePath,
    old_string: Annotated[str, Field(min_length=1, description="Exact text to replace (include enough context to be unique).")],
    new_string: Annotated[str, Field(description="The replacement text.")],
    expected_replacements: Annotated[int, Field(ge=1, description="How many occurrences old_string has; all are replaced.")] = 1,
) -> str:
    """Replace exact text in a file; fails without changing it when the count of occurrences differs."""
    text = ctx.workspace.read_bytes(path, ctx.sandbox.max_read_bytes).decode("utf-8", errors="replace")
    found = text.count(old_string)
    if found != expected_replacements:
        raise ToolError(
            f"{path}: old_string occurs {found} time(s), expected {expected_replacements}. Nothing was changed; "
            + (
                "copy the exact text with read_file."
                if found == 0
                else "add surrounding text to make it unique, or set expected_replacements."
            )
        )
    ctx.workspace.write_bytes(path, _encoded(ctx, text.replace(old_string, new_string)))
    return f"Replaced {found} occurrence(s) in {path}."


async def move_file(
    ctx: ToolContext,
    source: Annotated[str, Field(description="The file or folder to move.")],
    destination: Annotated[str, Field(description="Its new path (must not exist yet).")],
) -> str:
    """Move or rename a file or folder."""
    ctx.workspace.move(source, destination)
    return f"Moved {source} to {destination}."


async def create_directory(ctx: ToolContext, path: WorkspacePath) -> str:
    """Create a folder and any missing parents."""
    ctx.workspace.mkdir(path)
    return f"Created {path}/."


async def list_directory(
    ctx: ToolContext,
    path: Annotated[str, Field(description="The folder to list, relative to the workspace.")] = ".",
    depth: Annotated[int, Field(ge=1, le=5, description="How many levels to descend.")] = 1,
) -> str:
    """List a folder's files (with sizes) and subfolders."""
    entries = ctx.workspace.entries(path, depth)
    if not entries:
        return f"{path} is empty."
    base = len(ctx.workspace.resolve(path).parts)
    lines = []
    for e in entries[:MAX_LISTED]:
        indent = "  " * (len(e.path.parts) - base - 1)
        suffix = {"dir": "/", "link": " (symbolic link)", "other": " (special file)"}.get(e.kind, f" ({e.size:,} bytes)")
        lines.append(f"{indent}{e.path.name}{suffix}")
    if len(entries) > MAX_LISTED:
        lines.append(f"... and {len(entries) - MAX_LISTED} more; list a subfolder or use a smaller depth.")
    return "\n".join(lines)


TOOLS = (
    Tool.from_function(read_file, *ROLES, truncate=False),
    Tool.from_function(write_file, *ROLES),
    Tool.from_function(edit_file, *ROLES),
    Tool.from_function(move_file, *ROLES),
    Tool.from_function(create_directory, *ROLES),
    Tool.from_function(list_directory, *ROLES),
)
