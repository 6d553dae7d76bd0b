"""Model-backed research: document analysis and image captions (chat roles), image generation (an images endpoint).

`document_analyzer` and `image_captioner` are roles of the run's `roles` config
(resolved against the backbone `llm` with `core.config.resolve_role`); the
images endpoint is `tools.image_generation`. A tool whose model is not
configured is not offered (`Research.unavailable_tools`).
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from agents.config import ImageGenerationConfig
from agents.research.http import Service, post_json
from agents.tools.registry import ToolError
from core.language import detect_language
from core.llm.results import ModelError
from core.prompts import render
from core.protocols import Model
from core.records import Message

PROMPTS = Path(__file__).parent / "prompts"
ANALYZE_CHARS = 60_000  # document characters sent to the analyzer (about 15K tokens)


async def _ask(model: Model, message: Message, what: str, image_root: Path | None = None) -> str:
    try:
        result = await model.chat([message], image_root=image_root)
    except ModelError as exc:
        raise ToolError(f"{what} failed: {exc}") from exc
    if not result.content.strip():
        raise ToolError(f"{what}: the model returned no text (finish reason: {result.finish_reason}).")
    return result.content.strip()


async def analyze_document(model: Model, task: str, document_name: str, text: str) -> str:
    """The analyzer's answer to `task` about a document's text (its first ANALYZE_CHARS characters)."""
    prompt = render(
        PROMPTS,
        "document_analyze.j2",
        task=task,
        document_name=document_name,
        document=text[:ANALYZE_CHARS],
        cut=len(text) > ANALYZE_CHARS,
        shown=f"{ANALYZE_CHARS:,}",
        total=f"{len(text):,}",
        language=detect_language(task).lang,
    )
    return await _ask(model, Message("user", prompt), f"document_analyze on {document_name}")


async def caption_image(model: Model, image: str, image_root: Path) -> str:
    """The captioner's description of a workspace image (`image` is relative to `image_root`)."""
    return await _ask(
        model, Message("user", render(PROMPTS, "image_caption.j2"), images=(image,)), f"image_caption of {image}", image_root
    )


async def generate_image(cfg: ImageGenerationConfig, prompt: str, width: int, height: int, retries: int) -> bytes:
    """PNG (or whatever the endpoint encodes) bytes of one generated image."""
    service = Service("image_generation", cfg.base_url, os.environ.get(cfg.api_key_env) or None, cfg.timeout_s, retries)
    body = {"model": cfg.model, "prompt": prompt, "n": 1, "size": f"{width}x{height}", "response_format": "b64_json"}
    data = await post_json(service, "/images/generations", f"an image for {prompt[:60]!r}", json=body, headers=service.auth())
    items = data.get("data")
    encoded = items[0].get("b64_json") if isinstance(items, list) and items and isinstance(items[0], dict) else None
    if not encoded:
        raise ToolError("image_generation: the endpoint returned no b64_json image")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ToolError(f"image_generation: the returned image is not valid base64 ({exc})") from exc
