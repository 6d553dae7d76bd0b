"""What the eval tests share: slide texts, tasks, decks exported without a browser, slide images, and the fake
judge's replies (for the fake OpenAI server); `eval_run` runs `python -m eval.run` offline."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from PIL import Image, ImageDraw

from core.defects import Defect
from core.pdf import pymupdf
from core.records import Constraints, Rollout, Task
from core.run.usage import RoleUsage
from core.seams.deck import FILE as DECK_FILE
from core.seams.deck import DeckReport, DeckSlide
from fakes.decks import PAGE_SIZES, write_deck
from fakes.openai_server import Reply

ENGLISH = "Attention lets a model weigh every input token; training parallelises across the sequence and scales well."
CHINESE = "注意力机制让模型在生成每个输出时权衡所有输入，训练可以在整个序列上并行进行。"


def export_workspace(
    root: Path,
    task_id: str,
    shape: str,
    texts: Sequence[str],
    defects: dict[int, list[dict]] | None = None,
    headings: Sequence[str] = (),
) -> Rollout:
    """rollouts/<task_id>/ as an exported deck leaves it (deck.pdf, previews/, deck_defects.json), and its Rollout."""
    workspace = root / "rollouts" / task_id
    (workspace / "previews").mkdir(parents=True)
    pdf = write_deck(workspace / "deck.pdf", [PAGE_SIZES[shape]] * len(texts), texts, headings)
    slides = []
    with pymupdf.open(pdf) as doc:
        for number, page in enumerate(doc, start=1):
            png = f"previews/slide_{number:02d}.png"
            page.get_pixmap().save(workspace / png)
            measured = tuple(Defect(**d) for d in (defects or {}).get(number, []))
            slides.append(DeckSlide(f"slides/slide_{number:02d}.html", png, measured))
    DeckReport(shape, tuple(slides)).write(workspace / DECK_FILE)
    artifacts = {"pdf": f"rollouts/{task_id}/deck.pdf", "defects": f"rollouts/{task_id}/{DECK_FILE}"}
    return Rollout(
        task_id=task_id,
        status="done",
        artifacts=artifacts,
        usage={"agent": RoleUsage(calls=1, prompt_tokens=900, completion_tokens=100, cost_usd=0.02)},
    )


def task(
    task_id: str,
    source: str = "persona",
    language: str = "en",
    slides: int | None = None,
    aspect: str | None = None,
    explicit_language: str | None = None,
) -> Task:
    return Task(
        task_id,
        source,
        "Make a deck about attention.",
        language,
        constraints=Constraints(slides, slides, aspect, explicit_language),
    )


def slide_image(
    path: Path, colour: tuple[int, int, int] = (255, 255, 255), boxes: Sequence[tuple[int, int, int, int, str]] = ()
) -> Path:
    """A 320x180 slide: a background and coloured boxes (x0, y0, x1, y1, colour)."""
    img = Image.new("RGB", (320, 180), colour)
    draw = ImageDraw.Draw(img)
    for x0, y0, x1, y1, fill in boxes:
        draw.rectangle((x0, y0, x1, y1), fill=fill)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)
    return path


GOOD_DESCRIPTION = json.dumps(
    {"content": "A title and three short bullets; a photo of a reef.", "style": "Blue palette, aligned."}
)
GOOD_SCORES = json.dumps({"content": {"score": 4, "reason": "clear bullets"}, "style": {"score": 3, "reason": "plain layout"}})


def has_image(body: dict[str, Any]) -> bool:
    """Whether the request shows an image (a describer's does, a judge's not)."""
    return any(
        isinstance(m["content"], list) and any(p.get("type") == "image_url" for p in m["content"]) for m in body["messages"]
    )


def scripted_replies(describer: list[str], judge: list[str]):
    """Describer requests (they carry the image) and judge requests each get the next reply of their list."""
    queues = {True: list(describer), False: list(judge)}

    def policy(body: dict[str, Any]) -> Reply:
        queue = queues[has_image(body)]
        return Reply(content=queue.pop(0) if len(queue) > 1 else queue[0])

    return policy


def prompt_text(body: dict) -> str:
    """The text of a request's last message."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)


def is_checklist(body: dict) -> bool:
    """Whether the request asks the checklist judge."""
    return prompt_text(body).startswith("You check a finished presentation deck")


def answering(no: set[str], delay_s: float = 0.0):
    """A judge that answers every check of the request yes, but those in `no`; records the check ids asked."""
    asked: list[str] = []

    def policy(body: dict) -> Reply:
        ids = re.findall(r"^- (\S+): ", prompt_text(body), re.MULTILINE)
        asked.extend(ids)
        rows = [{"check_id": i, "answer": "no" if i in no else "yes", "reason": "seen"} for i in ids]
        return Reply(json.dumps({"answers": rows}), delay_s=delay_s)

    policy.asked = asked  # type: ignore[attr-defined]
    return policy


# One worker (one browser) plays the three tasks at once: a second one only adds its start-up on two CPUs.
FAST = ["tracking=disabled", "ray.num_workers=1", "ray.num_cpus_per_worker=0.5", "ray.rollouts_per_worker=3"]


def eval_run(cwd: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """`python -m eval.run` offline in `cwd`, on one worker; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "eval.run", *FAST, *overrides], cwd=cwd, capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done
