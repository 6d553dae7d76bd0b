"""A finished rollout's workspace packed for a run of many: images by content, few files, nothing twice.

After a rollout ends (done or failed), its images move into the run's blob store (core.run.blobs): every image
a message carries and every preview of the deck becomes one file named by its digest, and the trajectories and
the deck report name those files instead (the same bytes: export and parity see the pixels the teacher saw).
What else is kept follows `rollouts.keep_renders`:

- `inspected` (default): the renders some model was shown and the final previews; renders/ and previews/ go.
- `final`: the final previews only; a message's image that is not one of them keeps its workspace name, its
  file gone (the export refuses such a trajectory: for runs whose trajectories train no model).
- `all`: as `inspected`, and renders/ and previews/ stay in the workspace as written (hard links: no bytes twice).

The task's attachments, copied in for the agents, go too: the task names them. Then the trajectories, the deck
report and the deck's text become one record (`rollout.json.gz`, core.run.packed) and the agents' other files one
archive (`workspace.zip`: slides, manuscript, assets, notes); the PDF and the PPTX stay as they are. A scripted
rollout is then ~10 files: its record, PDF, PPTX, archive, one blob per slide, its unit.
"""

from __future__ import annotations

import contextlib
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from core.records import ArtifactError, Trajectory
from core.run.blobs import BlobStore, file_digest
from core.run.packed import ARCHIVE, RECORD, PackedRollout
from core.run.reader import DECK_TEXT, PACKED, TRAJECTORY_FILE, json_artifact
from core.run.store import atomic_write_bytes
from core.seams.deck import DeckReport
from pipeline.config import KeepRenders

RENDERS, PREVIEWS, ATTACHMENTS = "renders", "previews", "attachments"
DECK = "defects"  # with DECK_TEXT, the artifacts the record takes in
LOOSE = ("pdf", "pptx")  # the artifacts that stay files of their own
_COMPRESSED = frozenset({".png", ".webp", ".jpg", ".jpeg", ".gif", ".pdf", ".zip", ".gz", ".pptx", ".docx", ".xlsx"})


class Packer:
    """Packs the workspaces of one run (one per rollout worker)."""

    def __init__(self, run_root: Path, keep: KeepRenders):
        self.blobs = BlobStore(run_root)
        self.keep = keep

    def pack(self, workspace: Path, trajectories: list[Trajectory], artifacts: Mapping[str, str]) -> dict[str, str]:
        """Pack a finished rollout's workspace; returns its artifacts (name -> workspace-relative path) after."""
        root = workspace.resolve()
        refs: dict[str, str] = {}
        deck = self._deck(root, artifacts.get(DECK), refs)
        previews = set(refs.values())
        packed = tuple(self._trajectory(root, t, refs, previews) for t in trajectories)
        text = root / artifacts[DECK_TEXT] if DECK_TEXT in artifacts else None
        deck_text = json_artifact(text) if text and _plain_file(root, text) else None
        atomic_write_bytes(root / RECORD, PackedRollout(packed, deck, deck_text).to_bytes())
        for name in (TRAJECTORY_FILE.format(agent=t.agent) for t in trajectories):
            (root / name).unlink(missing_ok=True)
        for name in (DECK, DECK_TEXT):
            if name in artifacts:
                (root / artifacts[name]).unlink(missing_ok=True)
        if self.keep is not KeepRenders.all:
            for folder in (RENDERS, PREVIEWS):
                shutil.rmtree(root / folder, ignore_errors=True)
        shutil.rmtree(root / ATTACHMENTS, ignore_errors=True)
        archived = archive(root, root / ARCHIVE, keep={RECORD, *(artifacts[n] for n in LOOSE if n in artifacts)})
        after = {PACKED: RECORD} | {n: artifacts[n] for n in LOOSE if n in artifacts and (root / artifacts[n]).is_file()}
        return after | ({"workspace": ARCHIVE} if archived else {})

    def _deck(self, root: Path, report: str | None, refs: dict[str, str]) -> DeckReport | None:
        """The deck report, its previews named by their blobs (None when the rollout has no deck)."""
        if report is None or not (root / report).is_file():
            return None
        deck = DeckReport.read(root / report)
        return replace(deck, slides=tuple(replace(s, png=self._ref(root, s.png, refs)) for s in deck.slides))

    def _trajectory(self, root: Path, trajectory: Trajectory, refs: dict[str, str], previews: set[str]) -> Trajectory:
        def kept(image: str) -> str:
            if self.keep is not KeepRenders.final:
                return self._ref(root, image, refs)
            path = root / image  # kept only when it is a preview's image (it is never stored for itself)
            same = self.blobs.path_of(file_digest(path), path.suffix) if _plain_file(root, path) else None
            return ref if same and (ref := self.blobs.ref(same, root)) in previews else image

        messages = tuple(replace(m, images=tuple(map(kept, m.images))) if m.images else m for m in trajectory.messages)
        return replace(trajectory, messages=messages)

    def _ref(self, root: Path, image: str, refs: dict[str, str]) -> str:
        """The blob ref of a workspace image (`refs` remembers each one); an image that is missing, outside the
        workspace or not a plain file keeps its name (the export refuses it, naming it)."""
        if image not in refs:
            path = root / image
            try:
                refs[image] = self.blobs.ref(self.blobs.put(path), root) if _plain_file(root, path) else image
            except (OSError, ValueError) as exc:
                raise ArtifactError(f"{path}: cannot be stored ({exc})") from exc
        return refs[image]


def _plain_file(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root) and not path.is_symlink() and path.is_file()


def archive(root: Path, target: Path, keep: set[str]) -> int:
    """Move the files under `root` (but `keep`, workspace-relative) into one zip; returns how many went in.

    Links are left out (never followed: an agent's command may have pointed one anywhere); images and PDFs are
    stored as they are, text is deflated. Empty folders go."""
    files = sorted(
        p
        for p in root.rglob("*")
        if p.relative_to(root).as_posix() not in keep and p != target and not p.is_symlink() and p.is_file()
    )
    if not files:
        return 0
    partial = target.with_name(f".{target.name}.part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for path in files:
            stored = path.suffix.lower() in _COMPRESSED
            zf.write(path, path.relative_to(root).as_posix(), zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
    partial.replace(target)
    for path in files:
        path.unlink()
    for folder in sorted((p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty
    return len(files)
