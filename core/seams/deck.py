"""What a deck export measured, per slide: the `deck_defects.json` of a rollout's workspace, as a typed record.

The deck export (deck/export.py) writes it; the quality gate, the failure report, the run report, eval and the
release read it back through `DeckReport.read` (core.run.reader), never as loose dicts. The file's shape:
`{"aspect": ..., "slides": [{"file", "png", "defects": [...], "pptx"?}], "pptx"?: {"mode", "fidelity"?}}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.defects import Defect, Severity
from core.records import ArtifactError

FILE = "deck_defects.json"  # in the rollout's workspace (Rollout.artifacts["defects"])
SEVERITIES = frozenset(s.value for s in Severity)


@dataclass(frozen=True)
class DeckSlide:
    file: str  # workspace-relative HTML: slides/slide_01.html
    png: str  # workspace-relative preview: previews/slide_01.png
    defects: tuple[Defect, ...] = ()  # measured in the rendered slide (render/defects/)
    pptx: dict[str, Any] | None = None  # this slide's PPTX fidelity figures (deck/fidelity.py), when the check ran


@dataclass(frozen=True)
class DeckPptx:
    mode: str  # editable | picture
    fidelity: dict[str, Any] | None = None  # the deck's figures (or {"error": ...}), when the check ran


@dataclass(frozen=True)
class DeckReport:
    aspect: str
    slides: tuple[DeckSlide, ...] = ()
    pptx: DeckPptx | None = None  # None: a deck exported before the PPTX was

    @property
    def defects(self) -> int:
        return sum(len(s.defects) for s in self.slides)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    def to_dict(self) -> dict[str, Any]:
        slides = [
            {"file": s.file, "png": s.png, "defects": [d.to_dict() for d in s.defects]} | ({"pptx": s.pptx} if s.pptx else {})
            for s in self.slides
        ]
        pptx = (
            None
            if self.pptx is None
            else {"mode": self.pptx.mode} | ({"fidelity": self.pptx.fidelity} if self.pptx.fidelity is not None else {})
        )
        return {"aspect": self.aspect, "slides": slides} | ({"pptx": pptx} if pptx is not None else {})

    def write(self, path: Path) -> None:
        path.write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> DeckReport:
        """The report in `path`; ArtifactError naming the file and what is wrong when it is missing or malformed."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ArtifactError(f"{path}: no such file") from exc
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ArtifactError(f"{path}: unreadable ({exc})") from exc
        try:
            return cls.from_dict(data)
        except ArtifactError as exc:
            raise ArtifactError(f"{path}: {exc}") from None

    @classmethod
    def from_dict(cls, data: Any) -> DeckReport:
        if not isinstance(data, dict) or not isinstance(data.get("slides"), list):
            raise ArtifactError("not a deck defects file (no 'slides' list)")
        slides = tuple(_slide(number, entry) for number, entry in enumerate(data["slides"], start=1))
        if not slides:
            raise ArtifactError("the deck lists no slides")
        pptx = data.get("pptx")
        return cls(str(data.get("aspect", "")), slides, _pptx(pptx) if isinstance(pptx, dict) else None)


def _slide(number: int, entry: Any) -> DeckSlide:
    if not isinstance(entry, dict) or not isinstance(entry.get("png"), str):
        raise ArtifactError(f"slide {number} has no 'png' preview")
    defects = entry.get("defects") or []
    if not isinstance(defects, list) or not all(_is_defect(d) for d in defects):
        raise ArtifactError(f"slide {number} has defects without a known code or severity")
    pptx = entry.get("pptx")
    return DeckSlide(
        str(entry.get("file", entry["png"])),
        entry["png"],
        tuple(Defect(d["code"], d["severity"], str(d.get("element", "")), str(d.get("detail", ""))) for d in defects),
        pptx if isinstance(pptx, dict) else None,
    )


def _is_defect(item: Any) -> bool:
    return (
        isinstance(item, dict) and isinstance(item.get("code"), str) and bool(item["code"]) and item.get("severity") in SEVERITIES
    )


def _pptx(data: dict[str, Any]) -> DeckPptx:
    fidelity = data.get("fidelity")
    return DeckPptx(str(data.get("mode", "")), fidelity if isinstance(fidelity, dict) else None)
