"""What several filter tests share: the real documents in ../shared/data/, the synthetic run's scenario (one rollout
per outcome, fakes.runs) with the fate each rollout should meet, and a gate's verdict in one line."""

from __future__ import annotations

import csv
from pathlib import Path

from core.records import Verdict
from fakes.runs import RolloutSpec, RunSpec

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def shared_pdfs() -> list[dict[str, str]]:
    """MANIFEST.tsv rows of the bundled PDFs: file, pages, page_size_pt, language, ..."""
    with (SHARED_DATA / "MANIFEST.tsv").open(encoding="utf-8") as fh:
        return [row for row in csv.DictReader(fh, delimiter="\t") if row["file"].endswith(".pdf")]


SCENARIO = (
    RolloutSpec("en-169-ok", slides=3, revision="fix"),
    RolloutSpec("zh-43-ok", language="zh", aspect="4:3", slides=2, revision="fix"),
    RolloutSpec("en-a1-poster", aspect="A1", slides=1),
    RolloutSpec("zh-169-count", language="zh", slides=3, asked_slides=5),
    RolloutSpec("en-43-ignored", aspect="4:3", slides=2, revision="ignore"),
    RolloutSpec("en-169-broken", slides=2, broken_image=True),
    RolloutSpec("en-169-junk", slides=3, revision="fix", repeated=True),  # the content gate rejects it: no judge sees it
    RolloutSpec("zh-failed", language="zh", slides=1, failure="environment/context_overflow"),
    RolloutSpec("en-no-deck", slides=2, exported=False),  # finished, but the export left no deck
)
EXPECTED = {  # first failing category; None = accepted
    "en-169-ok": None,
    "zh-43-ok": None,
    "en-a1-poster": None,
    "zh-169-count": "constraint",
    "en-43-ignored": "consistency",
    "en-169-broken": "quality",
    "en-169-junk": "duplicate_slides",
    "zh-failed": "environment",
    "en-no-deck": "environment",
}
SCRIPTED = {"llm": {"backend": "scripted", "base_url": "none://scripted", "model": "scripted-policy"}}
SCENARIO_RUN = RunSpec(SCENARIO, gates=None, config=SCRIPTED, verdicts=False)  # the default gates, none run yet


def verdict(task_id: str, gate: str, passed: bool, category: str | None = None, reason: str = "why") -> Verdict:
    """A gate's verdict: a rejection in `category` (the gate's by default) for `reason`."""
    return Verdict(
        task_id=task_id,
        gate=gate,
        passed=passed,
        category=None if passed else category or gate,
        reasons=() if passed else (reason,),
    )
