"""File, todo, thinking and finalize tools, called as the model calls them."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

import pytest
from PIL import Image

from agents.sandbox import Workspace
from agents.tools import ToolContext

Call = Callable[..., Awaitable[Any]]


async def test_write_append_and_read_pages(call: Call, workspace: Workspace) -> None:
    assert (await call("write_file", path="notes/a.md", content="héllo\n")).text == "Wrote 7 bytes to notes/a.md."
    await call("write_file", path="notes/a.md", content="world\n", mode="append")
    assert (workspace.root / "notes/a.md").read_text() == "héllo\nworld\n"
    page = await call("read_file", path="notes/a.md", offset=1, length=4)
    assert page.text == "éllo\n[characters 1-5; more follows: read_file(path='notes/a.md', offset=5)]"
    assert (await call("read_file", path="notes/a.md", offset=5)).text == "\nworld\n"
    assert (await call("read_file", path="notes/a.md", offset=99)).is_error
    assert "No such file" in (await call("read_file", path="nope.md")).text


async def test_read_file_shows_images_and_refuses_binaries(call: Call, workspace: Workspace) -> None:
    (workspace.root / "assets").mkdir()
    Image.new("RGB", (40, 30), "blue").save(workspace.root / "assets/chart.png")
    obs = await call("read_file", path="assets/chart.png")
    assert obs.images == ("assets/chart.png",) and "40x30" in obs.text and not obs.is_error
    (workspace.root / "blob.bin").write_bytes(b"\x00\x01" * 100)
    assert "binary" in (await call("read_file", path="blob.bin")).text
    (workspace.root / "fake.png").write_text("not an image")
    assert (await call("read_file", path="fake.png")).is_error


async def test_edit_file_counts_occurrences(call: Call, workspace: Workspace) -> None:
    (workspace.root / "s.html").write_text("<p>a</p><p>a</p>")
    obs = await call("edit_file", path="s.html", old_string="<p>a</p>", new_string="<p>b</p>")
    assert obs.is_error and "occurs 2 time(s), expected 1" in obs.text
    assert "occurs 0 time(s)" in (await call("edit_file", path="s.html", old_string="zzz", new_string="")).text
    assert (workspace.root / "s.html").read_text() == "<p>a</p><p>a</p>"
    obs = await call("edit_file", path="s.html", old_string="<p>a</p>", new_string="<p>b</p>", expected_replacements=2)
    assert not obs.is_error and (workspace.root / "s.html").read_text() == "<p>b</p><p>b</p>"


async def test_move_create_and_list(call: Call, workspace: Workspace) -> None:
    await call("create_directory", path="a/b/c")
    await call("write_file", path="a/x.txt", content="12345")
    assert not (await call("move_file", source="a/x.txt", destination="d/y.txt")).is_error
    assert (workspace.root / "d/y.txt").read_text() == "12345"
    await call("write_file", path="a/x.txt", content="")
    assert "already exists" in (await call("move_file", source="a/x.txt", destination="d/y.txt")).text
    assert "No such file" in (await call("move_file", source="missing", destination="m")).text
    listing = (await call("list_directory", depth=2)).text
    assert listing == "a/\n  b/\n  x.txt (0 bytes)\nd/\n  y.txt (5 bytes)"
    assert (await call("list_directory", path="a/b/c")).text == "a/b/c is empty."
    assert (await call("list_directory", depth=9)).is_error


async def test_todo_list_is_kept_in_the_workspace(call: Call, workspace: Workspace) -> None:
    assert "no todo list" in (await call("todo_list")).text
    await call("todo_create", items=["research", "write manuscript"])
    assert (await call("todo_update", index=1, status="done")).text == "1. [done] research\n2. [pending] write manuscript"
    assert json.loads((workspace.root / "todo.json").read_text())[0] == {"item": "research", "status": "done"}
    assert "has 2 item(s)" in (await call("todo_update", index=3, status="done")).text
    assert (await call("todo_update", index=0, status="done")).is_error
    assert (await call("todo_list")).text.startswith("1. [done] research")


async def test_thinking_returns_its_argument(call: Call) -> None:
    assert (await call("thinking", thought="The title overflows.")).text == "The title overflows."


@pytest.mark.parametrize("role", ["presenter", "single"])
async def test_finalize_checks_the_slides(caller: Callable, workspace: Workspace, role: str) -> None:
    call = caller(ToolContext(workspace, role))
    assert "does not exist" in (await call("finalize", outcome="slides/")).text
    (workspace.root / "slides").mkdir()
    assert "is empty" in (await call("finalize", outcome="slides")).text
    (workspace.root / "slides/slide_01.html").write_text("<html></html>")
    (workspace.root / "slides/style.css").write_text("")
    obs = await call("finalize", outcome="slides/")
    assert obs.is_error and "style.css" in obs.text
    (workspace.root / "slides/style.css").unlink()
    (workspace.root / "slides/slide_02.html").write_text("<html></html>")
    obs = await call("finalize", outcome="slides/")
    assert not obs.is_error and "2 slide(s)" in obs.text
    (workspace.root / "deck").mkdir()
    (workspace.root / "deck/slide_01.html").write_text("<html></html>")
    obs = await call("finalize", outcome="deck/")  # the export would take slides/, not what was finalized
    assert obs.is_error and "slides/" in obs.text


async def test_finalize_checks_the_manuscript(caller: Callable, workspace: Workspace) -> None:
    call = caller(ToolContext(workspace, "researcher"))
    assert "not a markdown file" in (await call("finalize", outcome="slides/")).text
    assert "does not exist" in (await call("finalize", outcome="manuscript.md")).text
    (workspace.root / "manuscript.md").write_text("")
    assert "empty" in (await call("finalize", outcome="manuscript.md")).text
    (workspace.root / "manuscript.md").write_text("# Title\n\n---\n\n# Two")
    assert not (await call("finalize", outcome="manuscript.md")).is_error
    assert (await call("finalize", outcome="../manuscript.md")).is_error
