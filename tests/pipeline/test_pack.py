"""A finished rollout's images packed into the run's blob store, by retention (pipeline/pack.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from PIL import Image

from core.records import ArtifactError, Message, Trajectory
from core.run.blobs import is_blob_ref
from core.run.packed import ARCHIVE, RECORD, PackedRollout
from core.seams.deck import DeckReport, DeckSlide
from pipeline.config import KeepRenders
from pipeline.pack import Packer


def _image(path: Path, colour: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 24), colour).save(path, "WEBP", lossless=True)


ARTIFACTS = {
    "trajectory:presenter": "trajectory_presenter.json",
    "defects": "deck_defects.json",
    "pdf": "deck.pdf",
    "pptx": "deck.pptx",
}


def _workspace(run: Path, canary: Path) -> tuple[Path, list[Trajectory]]:
    """A presenter that saw two versions of its slide (the second is the final preview) and a link out."""
    ws = run / "rollouts" / "t1"
    (ws / "slides").mkdir(parents=True)
    (ws / "slides" / "slide_01.html").write_text("<h1>One</h1>")
    (ws / "deck.pdf").write_bytes(b"%PDF")
    (ws / "deck.pptx").write_bytes(b"PK")
    (ws / "slides" / "secret.txt").symlink_to(canary)
    _image(ws / "renders" / "slide_01.1.webp", "red")
    _image(ws / "renders" / "slide_01.2.webp", "blue")
    _image(ws / "renders" / "unseen.webp", "green")  # rendered for a model that reads no images
    _image(ws / "previews" / "slide_01.webp", "blue")
    (ws / "renders" / "link.webp").symlink_to(canary)
    (ws / "attachments").mkdir()
    (ws / "attachments" / "doc.pdf").write_bytes(b"%PDF copy")
    DeckReport("16:9", (DeckSlide("slides/slide_01.html", "previews/slide_01.webp"),)).write(ws / "deck_defects.json")
    messages = (
        Message("user", "make a deck"),
        Message("user", "v1", images=("renders/slide_01.1.webp",)),
        Message("user", "v2", images=("renders/slide_01.2.webp", "renders/slide_01.1.webp")),
        Message("user", "out", images=("renders/link.webp",)),
    )
    trajectory = Trajectory("t1", "presenter", "m", messages=messages)
    (ws / "trajectory_presenter.json").write_text(trajectory.to_json())
    return ws, [trajectory]


def _images(trajectory: Trajectory) -> list[str]:
    return [image for m in trajectory.messages for image in m.images]


@pytest.mark.parametrize("keep", list(KeepRenders))
def test_images_go_to_the_blob_store_once_by_content(tmp_path: Path, keep: KeepRenders) -> None:
    canary = tmp_path / "canary.webp"
    _image(canary, "black")
    run = tmp_path / "run"
    ws, trajectories = _workspace(run, canary)
    before = {image: (ws / image).read_bytes() for image in _images(trajectories[0])[:3]}
    artifacts = Packer(run, keep).pack(ws, trajectories, ARTIFACTS)

    assert artifacts == {"record": RECORD, "pdf": "deck.pdf", "pptx": "deck.pptx", "workspace": ARCHIVE}
    record = PackedRollout.read(ws / RECORD)
    (packed,) = record.trajectories
    deck = record.deck
    assert deck is not None
    assert is_blob_ref(deck.slides[0].png) and (ws / deck.slides[0].png).read_bytes() == before["renders/slide_01.2.webp"]
    refs = _images(packed)
    assert refs[3] == "renders/link.webp"  # a link out of the workspace keeps its name; its target is never stored
    blobs = sorted(p for p in (run / "blobs").rglob("*") if p.is_file())
    assert canary.read_bytes() not in {b.read_bytes() for b in blobs}
    assert not (ws / "attachments").exists()
    if keep is KeepRenders.final:  # only the image that is the final preview is kept
        assert refs[:3] == ["renders/slide_01.1.webp", deck.slides[0].png, "renders/slide_01.1.webp"]
        assert len(blobs) == 1
    else:  # the preview and the render that equals it are one blob; each message's image is the one it was shown
        assert all(is_blob_ref(r) for r in refs[:3]) and refs[1] == deck.slides[0].png and refs[0] == refs[2]
        assert [(ws / r).read_bytes() for r in refs[:3]] == [before[i] for i in _images(trajectories[0])[:3]]
        assert len(blobs) == 2
    with zipfile.ZipFile(ws / ARCHIVE) as archive:
        names = set(archive.namelist())
    assert "slides/slide_01.html" in names and "slides/secret.txt" not in names  # a link is never followed
    assert ("renders/slide_01.1.webp" in names) == (keep is KeepRenders.all) == ("previews/slide_01.webp" in names)
    left = [RECORD, "deck.pdf", "deck.pptx", ARCHIVE, "slides"] + (["renders"] if keep is KeepRenders.all else [])
    assert sorted(p.name for p in ws.iterdir()) == sorted(left)  # links stay where the agent left them
    assert [p.name for p in (ws / "slides").iterdir()] == ["secret.txt"]  # the link stays where the agent left it


def test_a_second_rollout_with_the_same_image_adds_no_blob(tmp_path: Path) -> None:
    run = tmp_path / "run"
    packer = Packer(run, KeepRenders.inspected)
    for task in ("a", "b"):
        ws = run / "rollouts" / task
        _image(ws / "renders" / "slide_01.1.webp", "white")
        seen = Message("user", "v", images=("renders/slide_01.1.webp",))
        packer.pack(ws, [Trajectory(task, "presenter", "m", messages=(seen,))], {})
    assert len([p for p in (run / "blobs").rglob("*") if p.is_file()]) == 1


def test_an_unreadable_deck_text_is_an_artifact_error_naming_it(tmp_path: Path) -> None:
    canary = tmp_path / "canary.webp"
    _image(canary, "black")
    ws, trajectories = _workspace(tmp_path / "run", canary)
    (ws / "deck_text.json").write_text("{cut short")
    with pytest.raises(ArtifactError, match=r"deck_text\.json: unreadable"):
        Packer(tmp_path / "run", KeepRenders.inspected).pack(ws, trajectories, ARTIFACTS | {"deck_text": "deck_text.json"})
