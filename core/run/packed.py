"""A packed rollout's record: `rollout.json.gz` in its workspace, the one file its stages read.

While a rollout runs, each agent's trajectory is saved as it goes (`trajectory_<agent>.json`) and the deck
export writes `deck_defects.json` and `deck_text.json`. When it ends, the pack step (pipeline/pack.py) writes
them as one record and puts the agents' working files in one archive: a run of 100,000 rollouts is not
millions of small files. `core.run.reader.RunReader` reads both layouts.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from core.codec import RecordError
from core.records import ArtifactError, Trajectory
from core.seams.deck import DeckReport

RECORD = "rollout.json.gz"  # Rollout.artifacts["record"]: gzipped JSON (~6x smaller; `zcat` shows it)
ARCHIVE = "workspace.zip"  # Rollout.artifacts["workspace"]: the agents' files (slides, manuscript, assets, ...)


@dataclass(frozen=True)
class PackedRollout:
    trajectories: tuple[Trajectory, ...]
    deck: DeckReport | None = None  # what the deck export measured (None: no deck)
    deck_text: Any = None  # the deck's text as the content gate reads it (deck/text.py), when the export wrote it

    def to_bytes(self) -> bytes:
        return gzip.compress(self.to_json(), mtime=0)

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "trajectories": [t.to_dict() for t in self.trajectories],
                "deck": self.deck.to_dict() if self.deck else None,
                "deck_text": self.deck_text,
            }
        )

    @classmethod
    def read(cls, path: Path) -> PackedRollout:
        """The record in `path`; ArtifactError naming the file and what is wrong."""
        try:
            data = orjson.loads(gzip.decompress(path.read_bytes()))
        except FileNotFoundError as exc:
            raise ArtifactError(f"{path}: no such file") from exc
        except (OSError, EOFError, zlib.error, json.JSONDecodeError) as exc:
            raise ArtifactError(f"{path}: unreadable ({exc})") from exc
        try:
            trajectories = tuple(Trajectory.from_dict(t) for t in data["trajectories"])
            deck = DeckReport.from_dict(data["deck"]) if data.get("deck") is not None else None
        except (KeyError, TypeError, RecordError, ArtifactError) as exc:
            raise ArtifactError(f"{path}: not a packed rollout ({exc})") from exc
        return cls(trajectories, deck, data.get("deck_text"))
