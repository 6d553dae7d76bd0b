"""How a run's costs grow with its size: `python -m benchmarks.scale --rollouts N [--json]`.

1. A seed run of real scripted rollouts (`pipeline.synthesize llm=scripted stages=[tasks,rollouts] limit=K`; untimed,
   `--seed DIR` reuses one).
2. A run of N rollouts cloned from the seed's packed rollouts (untimed): each clone gets a fresh task id and perturbed
   content (its record names its own id; each image it references has one pixel changed and is re-encoded into a blob
   of its own; its PDF ends with a comment of its own), so the blob store cannot collapse two clones; the deck's PPTX
   and the agents' archive are copied as they are.
3. Its bytes and files per rollout, as the rollouts stage left them.
4. Each downstream stage of `pipeline.synthesize` (filters, export with parity, report) in its own process, as a
   user runs it: wall seconds per 1,000 rollouts and the peak RSS of the process and those it starts (the export's
   `--export-workers`, summed).
5. The report's index opened in Chromium: seconds until its task table is drawn, and a screenshot
   of its top and of its task table (`<run>-report.png`, `<run>-report-table.png` beside the run).
6. A resume: two new tasks join the split and the rollouts stage runs again; `resume_s` is the time from its start
   until the first new rollout's workspace exists (the worker started it), without listing the finished ones by hand.

Prints one line per step; `--json` prints the figures as one JSON object instead:
`{"rollouts", "bytes_per_rollout", "files_per_rollout", "stages": {STAGE: {"s_per_1k", "peak_rss_mb", "wall_s"}},
"report_open": {"open_s", "largest_page_kb"}, "resume_s", ...}`. Needs about 0.4 MB of disk per rollout.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import psutil
from PIL import Image

from core.config import PROJECT_ROOT
from core.records import Rollout, Task
from core.run.blobs import BlobStore
from core.run.packed import RECORD
from core.run.reader import PACKED, RunReader
from core.run.store import RunStore, atomic_write_parquet
from render.renderer import encoded

SEED_TASKS = 8  # limit=8: the demo's size (7 train tasks, 1 eval)
DOWNSTREAM = ("filters", "export", "report")  # pipeline.synthesize's stages after rollouts
BLOB_REF = re.compile(r"(?:\.\./)+blobs/[0-9a-f]{2}/[0-9a-f]{64}\.[a-z0-9]{1,5}")
RSS_EVERY_S = 0.2
RUN_OVERRIDES = ("llm=scripted", "tracking=disabled", "run.resume=force")  # force: the clones ran no tasks stage


@dataclass(frozen=True)
class Seed:
    task: Task
    rollout: Rollout
    workspace: Path


def _synthesize(run_dir: Path, *overrides: str, stderr: Any = None) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "pipeline.synthesize", f"run.dir={run_dir}", *RUN_OVERRIDES, *overrides]
    return subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=stderr or subprocess.DEVNULL)


def _wait(process: subprocess.Popen[bytes], what: str) -> tuple[float, float]:
    """(wall seconds from now, peak RSS in MB) of a child process and the processes it starts (the export's
    workers): the larger of its own peak and the largest sum over its tree, sampled every `RSS_EVERY_S`;
    RuntimeError when it failed."""
    started = time.perf_counter()
    tree, peak = psutil.Process(process.pid), 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        with contextlib.suppress(psutil.Error):
            peak = max(peak, sum(_rss(p) for p in [tree, *tree.children(recursive=True)]))
        time.sleep(RSS_EVERY_S)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{what} exited with {process.returncode}")
    return time.perf_counter() - started, max(peak, usage.ru_maxrss * 1024) / 2**20  # ru_maxrss: KiB on Linux


def _rss(process: psutil.Process) -> int:
    try:
        return int(process.memory_info().rss)
    except psutil.Error:  # gone meanwhile
        return 0


def make_seed(seed_dir: Path, tasks: int) -> list[Seed]:
    """The seed run's finished rollouts, made first when `seed_dir` holds none."""
    if not (seed_dir / "rollouts.parquet").is_file():
        _wait(_synthesize(seed_dir, f"limit={tasks}", "stages=[tasks,rollouts]"), "the seed run")
    run = RunReader.open(seed_dir)
    rollouts = run.rollouts()
    by_id = run.tasks_of(r.task_id for r in rollouts)
    seeds = [Seed(by_id[r.task_id], r, run.workspace(r)) for r in rollouts if r.task_id in by_id]
    if not seeds:
        raise RuntimeError(f"{seed_dir}: the seed run has no rollouts")
    unpacked = [s.task.task_id for s in seeds if PACKED not in s.rollout.artifacts]
    if unpacked:
        raise RuntimeError(f"{seed_dir}: rollouts {unpacked[:3]} are not packed (a run made before packing): make a new seed")
    return seeds


def _perturbed_image(source: Path, variant: int) -> bytes:
    """`source` with one pixel changed (where depends on `variant`), re-encoded as the renderer encodes it."""
    with Image.open(source) as image:
        pixels = image.convert("RGBA" if "A" in image.getbands() else "RGB")
    x, y = variant % pixels.width, (variant // pixels.width) % pixels.height
    old = pixels.getpixel((x, y))
    assert isinstance(old, tuple)  # an RGB(A) pixel
    pixels.putpixel((x, y), tuple((c + 1) % 256 for c in old))
    out = io.BytesIO()
    pixels.save(out, "PNG")
    return encoded(out.getvalue(), pixels, source.suffix)


def _cloned_record(seed: Seed, target: Path, new_id: str, variant: int, blobs: BlobStore) -> bytes:
    """The seed's packed record for `new_id`: its own id throughout, each blob it names perturbed into a new one."""
    text = gzip.decompress((seed.workspace / RECORD).read_bytes()).decode("utf-8").replace(seed.task.task_id, new_id)
    refs: dict[str, str] = {}
    for ref in sorted(set(BLOB_REF.findall(text))):
        fresh = target / f".{Path(ref).name}"
        fresh.write_bytes(_perturbed_image((seed.workspace / ref).resolve(), variant))
        refs[ref] = blobs.ref(blobs.put(fresh), target)
        fresh.unlink()
    return gzip.compress(BLOB_REF.sub(lambda m: refs[m.group(0)], text).encode("utf-8"), mtime=0)


def _clone_workspace(seed: Seed, target: Path, new_id: str, variant: int, blobs: BlobStore) -> None:
    """The seed's packed workspace under `target`: the record and its blobs perturbed, the PDF with a comment of
    its own, the archive and the PPTX copied (nothing dedups them)."""
    target.mkdir(parents=True)
    for source in sorted(p for p in seed.workspace.iterdir() if p.is_file()):
        out = target / source.name
        if source.name == RECORD:
            out.write_bytes(_cloned_record(seed, target, new_id, variant, blobs))
        elif source.suffix == ".pdf":
            out.write_bytes(source.read_bytes() + f"\n% variant {variant}\n".encode())
        else:
            shutil.copyfile(source, out)


def _clone_one(args: tuple[Seed, Path, int]) -> tuple[Task, Rollout]:
    seed, run_dir, variant = args
    new_id = f"{seed.task.task_id}-v{variant:06d}"
    old_prefix = f"rollouts/{seed.task.task_id}"
    _clone_workspace(seed, run_dir / "rollouts" / new_id, new_id, variant, BlobStore(run_dir))
    task = replace(seed.task, task_id=new_id, instruction=f"{seed.task.instruction} (variant {variant})")
    artifacts = {name: path.replace(old_prefix, f"rollouts/{new_id}", 1) for name, path in seed.rollout.artifacts.items()}
    return task, replace(seed.rollout, task_id=new_id, artifacts=artifacts)


def clone_run(seeds: list[Seed], seed_dir: Path, run_dir: Path, n: int, workers: int) -> list[Task]:
    """A run of `n` rollouts cloned from `seeds` (config from the seed run); returns the tasks written."""
    run_dir.mkdir(parents=True)
    for name in ("config.yaml", "config.hash", "prompts.json"):
        if (seed_dir / name).is_file():
            shutil.copyfile(seed_dir / name, run_dir / name)
    store = RunStore(run_dir)
    jobs = [(seeds[i % len(seeds)], run_dir, i) for i in range(n)]
    tasks: list[Task] = []
    with ProcessPoolExecutor(workers) as pool:
        for task, rollout in pool.map(_clone_one, jobs, chunksize=16):
            store.commit("rollouts", task.task_id, rollout)
            tasks.append(task)
    atomic_write_parquet(tasks, run_dir / "tasks" / "train.parquet", Task)
    store.compact("rollouts", Rollout)
    store.seal("rollouts")  # as the rollouts stage's entry point does when it ends
    return tasks


def footprint(run_dir: Path) -> tuple[int, int]:
    """(bytes, files) under `run_dir`: a file hard-linked twice (the export's images) counts once in bytes, twice in
    files (each is a directory entry to list)."""
    size = count = 0
    seen: set[tuple[int, int]] = set()
    for entry in _walk(run_dir):
        stat = entry.stat(follow_symlinks=False)
        if (stat.st_dev, stat.st_ino) not in seen:
            seen.add((stat.st_dev, stat.st_ino))
            size += stat.st_size
        count += 1
    return size, count


def _walk(folder: Path) -> Iterator[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield entry


def time_stage(run_dir: Path, stage: str, n: int, log: Path, *overrides: str) -> dict[str, float]:
    with open(log, "ab") as err:
        wall, rss = _wait(_synthesize(run_dir, f"stages=[{stage}]", *overrides, stderr=err), f"stage {stage} (log: {log})")
    return {"wall_s": round(wall, 2), "s_per_1k": round(wall * 1000 / n, 2), "peak_rss_mb": round(rss, 1)}


def time_resume(run_dir: Path, seeds: list[Seed], tasks: list[Task], log: Path, timeout_s: float = 600) -> float:
    """Seconds from the rollouts stage's start until the first of two new tasks has its workspace."""
    new = [replace(s.task, task_id=f"{s.task.task_id}-new{k}") for k, s in enumerate(seeds[:2])]
    atomic_write_parquet([*tasks, *new], run_dir / "tasks" / "train.parquet", Task)
    started = time.perf_counter()
    with open(log, "ab") as err:
        process = _synthesize(run_dir, "stages=[rollouts]", stderr=err)
        reached = None
        while process.poll() is None and time.perf_counter() - started < timeout_s:
            if reached is None and any((run_dir / "rollouts" / t.task_id).exists() for t in new):
                reached = time.perf_counter() - started
            time.sleep(0.05)
        process.wait(timeout=max(1.0, timeout_s - (time.perf_counter() - started)))
    if process.returncode != 0 or reached is None:
        raise RuntimeError(f"the resumed rollouts stage exited with {process.returncode} (log: {log})")
    done = RunStore(run_dir).done("rollouts")
    if len(done) != len(tasks) + len(new):
        raise RuntimeError(f"after the resume the run holds {len(done)} rollouts, not {len(tasks) + len(new)}")
    return round(reached, 2)


def time_report_open(run_dir: Path, screenshot: Path) -> dict[str, Any]:
    """Seconds until Chromium has the report's index loaded and its task table drawn (a fresh browser page), the
    bytes of the largest page it loads, and a screenshot of it."""
    from playwright.sync_api import sync_playwright

    from render.config import RenderConfig
    from render.renderer import CHROMIUM_ARGS

    index = run_dir / "report" / "index.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=RenderConfig().chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        started = time.perf_counter()
        page.goto(index.as_uri(), wait_until="load")
        page.wait_for_function("document.querySelector('#page-at') && document.querySelector('#page-at').textContent")
        opened = time.perf_counter() - started
        page.screenshot(path=screenshot)
        page.locator("#filters").scroll_into_view_if_needed()
        page.screenshot(path=screenshot.with_name(f"{screenshot.stem}-table.png"))
        browser.close()
    pages = [index, run_dir / "report" / "rows.js", *(run_dir / "report" / "rollouts").glob("*.html")]
    return {"open_s": round(opened, 2), "largest_page_kb": round(max(p.stat().st_size for p in pages) / 1024)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=1000, help="rollouts in the cloned run")
    parser.add_argument("--seed", type=Path, help="the seed run's folder: made there if it holds none (default: a temp dir)")
    parser.add_argument("--seed-tasks", type=int, default=SEED_TASKS, help="limit=K of the seed run")
    parser.add_argument("--keep", type=Path, help="build the cloned run here and keep it (default: a temp dir)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes that clone")
    parser.add_argument("--export-workers", type=int, default=1, help="export.workers of the export stage")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    say = (lambda *_: None) if args.json else print
    with tempfile.TemporaryDirectory() as tmp:
        seed_dir = args.seed or Path(tmp) / "seed"
        run_dir = args.keep or Path(tmp) / "run"
        log = run_dir.with_name(f"{run_dir.name}.log")  # the stages' stderr
        started = time.perf_counter()
        seeds = make_seed(seed_dir, args.seed_tasks)
        say(f"seed: {len(seeds)} scripted rollouts in {seed_dir} ({time.perf_counter() - started:.0f} s)")
        started = time.perf_counter()
        tasks = clone_run(seeds, seed_dir, run_dir, args.rollouts, args.workers)
        size, files = footprint(run_dir)
        figures: dict[str, Any] = {
            "rollouts": args.rollouts,
            "bytes_per_rollout": round(size / args.rollouts),
            "files_per_rollout": round(files / args.rollouts, 2),
            "stages": {},
        }
        say(f"cloned {args.rollouts} rollouts in {time.perf_counter() - started:.0f} s: {size / 2**20:.0f} MB, {files} files")
        for stage in DOWNSTREAM:
            overrides = [f"export.workers={args.export_workers}"] if stage == "export" else []
            figures["stages"][stage] = time_stage(run_dir, stage, args.rollouts, log, *overrides)
            say(f"{stage}: {figures['stages'][stage]}")
        size, files = footprint(run_dir)
        figures["after_stages"] = {
            "bytes_per_rollout": round(size / args.rollouts),
            "files_per_rollout": round(files / args.rollouts, 2),
        }
        figures["report_open"] = time_report_open(run_dir, run_dir.with_name(f"{run_dir.name}-report.png"))
        say(f"report: opened in Chromium in {figures['report_open']['open_s']} s (screenshot beside the run)")
        figures["resume_s"] = time_resume(run_dir, seeds, tasks, log)
        say(f"resume: the first new rollout started after {figures['resume_s']} s")
        figures["cpus"] = os.cpu_count()
        print(json.dumps(figures, indent=1) if args.json else json.dumps(figures))


if __name__ == "__main__":
    main()
