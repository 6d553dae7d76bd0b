"""Reconstructing what the agent did after each critic injection, from the trajectory's tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.records import ArtifactError, Trajectory
from fakes.runs import RolloutSpec, candidate
from fakes.trajectories import TITLE_FIX, TrajectoryBuilder, slide_html, title_finding
from filters.revisions import revisions

SLIDE = "slides/slide_01.html"


def presenter(root: Path, spec: RolloutSpec) -> Trajectory:
    """The presenter's trajectory of a rollout built from `spec`."""
    return next(t for t in candidate(root, spec).trajectories() if t.agent == "presenter")


def test_fix_shows_as_the_net_diff_of_the_inspected_slide_up_to_its_next_inspection(tmp_path: Path) -> None:
    (revision,) = revisions(presenter(tmp_path, RolloutSpec("t", slides=2, revision="fix")))
    assert (revision.agent, revision.tool, revision.artifact, revision.reinspected) == ("presenter", "inspect_slide", SLIDE, True)
    assert revision.findings[0].evidence.startswith("overflow at h1.title")
    assert [path for path, _ in revision.diffs] == [SLIDE, "slides/slide_02.html"]  # the artifact first
    assert revision.artifact_lines() == [
        f'<h1 class="title" style="{TITLE_FIX[0]}">1. Attention in practice</h1>',
        f'<h1 class="title" style="{TITLE_FIX[1]}">1. Attention in practice</h1>',
    ]
    assert revision.actions == (
        "said: Shrinking the title.",
        f"edit_file {SLIDE}: replace '{TITLE_FIX[0]}'",
        f"write_file slides/slide_02.html: {len(slide_html(RolloutSpec('t', slides=2), 2))} characters",
    )


def test_ignored_finding_leaves_the_artifact_unchanged(tmp_path: Path) -> None:
    (revision,) = revisions(presenter(tmp_path, RolloutSpec("t", language="zh", aspect="4:3", slides=3, revision="ignore")))
    assert not revision.artifact_changed and revision.artifact_lines() == []
    assert [path for path, _ in revision.diffs] == ["slides/slide_02.html", "slides/slide_03.html"]


def test_window_ends_at_the_next_inspection_of_the_same_artifact_only() -> None:
    html = slide_html(RolloutSpec("t", slides=1), 1, TITLE_FIX[0])
    t = TrajectoryBuilder("t").call("write_file", path=SLIDE, content=html).call("inspect_slide", html_file=SLIDE)
    t.inject(SLIDE, [title_finding(1)])
    t.call("inspect_slide", html_file="slides/slide_02.html")  # another slide: the window goes on
    t.call("edit_file", path="./slides/slide_01.html", old_string=TITLE_FIX[0], new_string=TITLE_FIX[1])
    t.call("inspect_slide", html_file=SLIDE)
    t.call("edit_file", path=SLIDE, old_string="Attention", new_string="Focus")  # after the re-inspection: not counted
    (revision,) = revisions(t.build())
    assert revision.reinspected
    assert revision.artifact_lines()[1] == f'<h1 class="title" style="{TITLE_FIX[1]}">1. Attention in practice</h1>'
    assert all("Focus" not in line for line in revision.artifact_lines())


def test_failed_calls_change_nothing_and_show_their_error() -> None:
    html = slide_html(RolloutSpec("t", slides=1), 1, TITLE_FIX[0])
    t = TrajectoryBuilder("t").call("write_file", path=SLIDE, content=html).call("inspect_slide", html_file=SLIDE)
    t.inject(SLIDE, [title_finding(1)])
    t.call(
        "edit_file",
        "Error: slides/slide_01.html: old_string occurs 0 time(s), expected 1.",
        path=SLIDE,
        old_string="nope",
        new_string="x",
    )
    (revision,) = revisions(t.build())
    assert revision.diffs == ()
    assert revision.actions == (f"edit_file {SLIDE}: replace 'nope' -> Error: {SLIDE}: old_string occurs 0 time(s), expected 1.",)
    assert not revision.reinspected


def test_text_the_trajectory_never_wrote_shows_as_the_edits_themselves() -> None:
    t = (
        TrajectoryBuilder("t")
        .call("execute_command", command="cp template.html slides/slide_01.html")
        .call("inspect_slide", html_file=SLIDE)
    )
    t.inject(SLIDE, [title_finding(1)])
    t.call("edit_file", path=SLIDE, old_string="font-size:160px", new_string="font-size:48px")
    (revision,) = revisions(t.build())
    ((path, diff),) = revision.diffs
    assert path == SLIDE and diff.startswith(f"(the earlier text of {SLIDE} is not in the trajectory; its edits:)")
    assert revision.artifact_lines() == ["font-size:160px", "font-size:48px"]
    assert revision.actions == (f"edit_file {SLIDE}: replace 'font-size:160px'",)  # the command ran before the injection


def test_append_and_move_are_replayed() -> None:
    t = TrajectoryBuilder("t").call("write_file", path="draft.md", content="# One\n").call("inspect_manuscript", path="draft.md")
    t.inject(
        "draft.md",
        [{"category": "constraint", "severity": "major", "evidence": "slide_count: 1 slide, asked 2", "fix": "add a slide"}],
        tool="inspect_manuscript",
    )
    t.call("write_file", path="draft.md", content="---\n# Two\n", mode="append").call(
        "move_file", source="draft.md", destination="manuscript.md"
    )
    t.call("edit_file", path="manuscript.md", old_string="# Two", new_string="# Two: results")
    (revision,) = revisions(t.build())
    assert revision.tool == "inspect_manuscript" and revision.artifact == "draft.md"
    diffs = dict(revision.diffs)
    assert diffs["manuscript.md"].splitlines()[-3:] == ["+# One", "+---", "+# Two: results"]


def test_unreadable_findings_are_an_artifact_error() -> None:
    t = TrajectoryBuilder("t").call("write_file", path=SLIDE, content="x").call("inspect_slide", html_file=SLIDE)
    t.inject(SLIDE, [{"category": "vibes", "severity": "critical", "evidence": "bad", "fix": "fix"}])
    with pytest.raises(ArtifactError, match="findings of the injection at step 1 are unreadable"):
        revisions(t.build())
