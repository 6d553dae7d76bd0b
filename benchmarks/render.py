"""Render benchmark: our warm inspect_slide vs a browser per slide vs bare Playwright.

Run: `python -m benchmarks.render [--slides 50]`. Prints per-slide medians, totals and
ratios over the same generated slides, then 8-concurrent vs sequential throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from playwright.async_api import async_playwright

from render.config import RenderConfig
from render.inspection import inspect_slide
from render.renderer import CHROMIUM_ARGS, Renderer, aspect_size

PALETTES = [
    ("#ffffff", "#1f2328", "#2f6fde"),
    ("#0f172a", "#e2e8f0", "#38bdf8"),
    ("#fff7ed", "#2b2b2b", "#c2410c"),
    ("#f0fdf4", "#14532d", "#16a34a"),
    ("#1e1b4b", "#f5f5ff", "#a78bfa"),
]
TITLES = [
    "Quarterly results",
    "季度业绩回顾",
    "How transformers attend",
    "课堂互动设计",
    "Field notes from the valley",
]
BULLETS = [
    "Revenue grew 8% while costs stayed flat",
    "数据质量比数据规模更重要",
    "Latency fell from 160 ms to 45 ms",
    "学生参与度显著提升",
    "Three new sites joined the study",
]


def _body(i: int, fg: str, accent: str) -> str:
    kind = i % 5
    items = "".join(f"<li>{BULLETS[(i + k) % len(BULLETS)]}</li>" for k in range(3 + i % 3))
    if kind == 0:
        return f"<ul>{items}</ul>"
    if kind == 1:
        return f'<div style="display:flex;gap:48px"><ul style="flex:1">{items}</ul><ul style="flex:1">{items}</ul></div>'
    if kind == 2:
        rows = "".join(f"<tr><td>Item {r}</td><td>{r * 17 % 100}%</td><td>{r * 31 % 97} ms</td></tr>" for r in range(1, 6))
        return f'<table style="border-collapse:collapse;width:100%;font-size:22px" border="1"><tr><th>Name</th><th>Share</th><th>Time</th></tr>{rows}</table>'
    if kind == 3:
        bars = "".join(
            f'<rect x="{60 + k * 180}" y="{380 - (k + 1) * 70}" width="120" height="{(k + 1) * 70}" fill="{accent}"/>'
            for k in range(5)
        )
        return f'<svg width="1000" height="400" xmlns="http://www.w3.org/2000/svg">{bars}<line x1="40" y1="380" x2="980" y2="380" stroke="{fg}"/></svg>'
    return f'<div style="display:flex;gap:40px"><div style="width:480px;height:300px;border-radius:16px;background:linear-gradient(135deg,{accent},#888)"></div><ul>{items}</ul></div>'


def make_slides(folder: Path, count: int) -> list[Path]:
    """Varied slides (five layouts, five palettes, English and Chinese) with no external assets."""
    paths = []
    for i in range(count):
        bg, fg, accent = PALETTES[i % len(PALETTES)]
        html = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><style>
html,body{{margin:0;width:1280px;height:720px;overflow:hidden}}
body{{font-family:sans-serif;background:{bg};color:{fg};padding:56px 72px;box-sizing:border-box}}
h2{{margin:0 0 28px;font-size:44px;color:{accent}}} li{{font-size:24px;line-height:1.6}} td,th{{padding:8px 14px}}
</style></head><body><h2>{TITLES[i % len(TITLES)]} #{i + 1}</h2>{_body(i, fg, accent)}</body></html>"""
        path = folder / "slides" / f"slide_{i + 1:02d}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        paths.append(path)
    return paths


async def bench_interleaved(paths: list[Path], root: Path, out: Path) -> tuple[list[float], list[float], list[float]]:
    """(a) our inspect_slide, (a') the same with a script in each slide, (c) bare Playwright: slide by
    slide in turn, so that load from other processes hits all three alike."""
    width, height = aspect_size("16:9")
    scripted = []
    for path in paths:
        twin = path.with_name(f"{path.stem}_js.html")
        twin.write_text(path.read_text(encoding="utf-8").replace("</body>", "<script>document.title = 'x';</script></body>"))
        scripted.append(twin)
    ours, ours_js, bare = [], [], []
    cfg = RenderConfig(max_concurrent=8, max_pages=8)
    async with (
        Renderer(cfg, roots=[root]) as renderer,
        Renderer(cfg, roots=[root]) as renderer_js,
        async_playwright() as pw,
    ):
        browser = await pw.chromium.launch(executable_path=RenderConfig().chromium_path, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": width, "height": height})
        await page.set_content(paths[0].read_text(encoding="utf-8"))  # warm-up, as for the renderer
        await inspect_slide(renderer, root, str(paths[0].relative_to(root)), "16:9")
        await inspect_slide(renderer_js, root, str(scripted[0].relative_to(root)), "16:9")
        for path, twin in zip(paths, scripted):
            start = time.perf_counter()
            await inspect_slide(renderer, root, str(path.relative_to(root)), "16:9")
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            await inspect_slide(renderer_js, root, str(twin.relative_to(root)), "16:9")
            ours_js.append(time.perf_counter() - start)
            start = time.perf_counter()
            await page.set_content(path.read_text(encoding="utf-8"))
            await page.screenshot(path=str(out / f"{path.stem}.c.png"))
            bare.append(time.perf_counter() - start)
        await browser.close()
    return ours, ours_js, bare


async def bench_throughput(paths: list[Path], root: Path) -> tuple[float, float]:
    """Renders per second: 8 in flight vs one at a time, each on a fresh renderer (whose cache of
    printed pages would otherwise turn a second inspection of an unchanged slide into a copy)."""

    async def rate(in_flight: int) -> float:
        async with Renderer(RenderConfig(max_concurrent=8, max_pages=8), roots=[root]) as renderer:
            warm = []
            for path in paths[:8]:  # open the pages on copies that differ from the measured slides
                twin = path.with_name(f"{path.stem}_warm{in_flight}.html")
                twin.write_text(path.read_text(encoding="utf-8") + "<!-- warm-up -->")
                warm.append(str(twin.relative_to(root)))
            await asyncio.gather(*(inspect_slide(renderer, root, w, "16:9") for w in warm))
            slots = asyncio.Semaphore(in_flight)

            async def one(path: Path) -> None:
                async with slots:
                    await inspect_slide(renderer, root, str(path.relative_to(root)), "16:9")

            start = time.perf_counter()
            await asyncio.gather(*(one(p) for p in paths))
            return len(paths) / (time.perf_counter() - start)

    return await rate(8), await rate(1)


async def bench_browser_per_slide(paths: list[Path], out: Path) -> list[float]:
    """(b) what tools that spawn a browser per check pay."""
    width, height = aspect_size("16:9")
    times = []
    async with async_playwright() as pw:
        for path in paths:
            start = time.perf_counter()
            browser = await pw.chromium.launch(executable_path=RenderConfig().chromium_path, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": width, "height": height})
            await page.goto(path.as_uri())
            await page.screenshot(path=str(out / f"{path.stem}.b.png"))
            await browser.close()
            times.append(time.perf_counter() - start)
    return times


def _row(name: str, times: list[float]) -> str:
    return f"{name:<44} median {statistics.median(times) * 1000:7.1f} ms   total {sum(times):6.2f} s"


async def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = make_slides(root, count)
        out = root / "out"
        out.mkdir()
        ours, ours_js, bare = await bench_interleaved(paths, root, out)
        per_browser = await bench_browser_per_slide(paths, out)
        concurrent, sequential = await bench_throughput(paths, root)
    print(f"{count} slides, 1280x720, {os.cpu_count()} CPUs")
    print(_row("(a) inspect_slide, warm renderer", ours))
    print(_row("(a') same, each slide with a <script>", ours_js))
    print(_row("(b) new browser per slide", per_browser))
    print(_row("(c) bare set_content + screenshot", bare))
    print(f"(b)/(a) median {_ratio(per_browser, ours)}   (target >= 3x)")
    print(f"(a)/(c) median {_ratio(ours, bare)}   (target <= 1.3x)")
    print(f"(a')/(c) median {_ratio(ours_js, bare)}")
    print(
        f"throughput: 8 concurrent {concurrent:.1f} renders/s, sequential {sequential:.1f} renders/s ({concurrent / sequential:.2f}x)"
    )


def _ratio(x: list[float], y: list[float]) -> str:
    return f"{statistics.median(x) / statistics.median(y):.2f}x   total {sum(x) / sum(y):.2f}x"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slides", type=int, default=50)
    asyncio.run(main(parser.parse_args().slides))
