"""search_images backends: Openverse and Wikimedia Commons over HTTP; `offline` searches the local image library.

Each backend is `async (research, query, max_results) -> [ImageHit]`, listed
in `IMAGES` under the name `tools.image_backend` picks. Online hits are URLs the
agent downloads with download_file; offline hits name files of the library,
which the tool copies into the workspace.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from agents.research.backends import ResearchBackend
from agents.research.http import get_json
from agents.research.search import plain
from core.seams.research import ImageHit

if TYPE_CHECKING:
    from agents.research.runtime import Research

ImageBackend = Callable[["Research", str, int], Awaitable[list[ImageHit]]]
CAPTION_CHARS = 300
COMMONS_WIDTH = 1280  # Commons serves a scaled copy this wide; originals can be tens of megabytes


async def images_offline(research: Research, query: str, max_results: int) -> list[ImageHit]:
    return (await research.image_library()).search(query, max_results)


def _openverse_hit(item: dict[str, Any]) -> ImageHit:
    tags = ", ".join(t["name"] for t in item.get("tags") or [] if isinstance(t, dict) and t.get("name"))
    licence = " ".join(x for x in (str(item.get("license") or "").upper(), str(item.get("license_version") or "")) if x)
    creator = f" by {item['creator']}" if item.get("creator") else ""
    caption = plain(item.get("title"), CAPTION_CHARS) + (f" (tags: {tags})" if tags else "")
    return ImageHit(
        plain(item.get("title"), 200) or item["url"],
        item["url"],
        item.get("width"),
        item.get("height"),
        plain(caption, CAPTION_CHARS),
        (licence + creator) or None,
        item.get("foreign_landing_url"),
    )


async def images_openverse(research: Research, query: str, max_results: int) -> list[ImageHit]:
    service = research.service("openverse")
    params = {"q": query, "page_size": max_results, "mature": "false"}
    data = await get_json(service, "/v1/images/", f"image search {query!r}", params=params, headers=service.auth())
    return [_openverse_hit(i) for i in (data.get("results") or [])[:max_results] if isinstance(i, dict) and i.get("url")]


def _commons_hit(page: dict[str, Any]) -> ImageHit:
    info = page["imageinfo"][0]
    meta = info.get("extmetadata") or {}

    def field(name: str) -> str:
        return plain((meta.get(name) or {}).get("value"), CAPTION_CHARS)

    title = PurePosixPath(str(page.get("title", "")).removeprefix("File:")).stem
    url, width, height = (
        (info["thumburl"], info.get("thumbwidth"), info.get("thumbheight"))
        if info.get("thumburl")
        else (info["url"], info.get("width"), info.get("height"))
    )
    licence = " ".join(x for x in (field("LicenseShortName"), field("Artist") and f"by {field('Artist')}") if x)
    return ImageHit(title, url, width, height, field("ImageDescription") or title, licence or None, info.get("descriptionurl"))


async def images_wikimedia(research: Research, query: str, max_results: int) -> list[ImageHit]:
    params = {
        "action": "query",
        "format": "json",
        "generator": "search",
        "gsrsearch": f"{query} filetype:bitmap",
        "gsrnamespace": 6,
        "gsrlimit": max_results,
        "prop": "imageinfo",
        "iiprop": "url|size|extmetadata",
        "iiextmetadatafilter": "ImageDescription|LicenseShortName|Artist",
        "iiurlwidth": COMMONS_WIDTH,
    }
    data = await get_json(research.service("wikimedia"), "/w/api.php", f"image search {query!r}", params=params)
    pages = [p for p in ((data.get("query") or {}).get("pages") or {}).values() if isinstance(p, dict) and p.get("imageinfo")]
    return [_commons_hit(p) for p in sorted(pages, key=lambda p: p.get("index", 0))[:max_results]]


IMAGES: dict[str, ResearchBackend[ImageBackend]] = {
    "offline": ResearchBackend(images_offline),
    "openverse": ResearchBackend(images_openverse),
    "wikimedia": ResearchBackend(images_wikimedia),
}
