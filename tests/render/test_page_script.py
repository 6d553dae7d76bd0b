"""In-page scripts: an entry file and the parts it includes make one function for page.evaluate."""

from __future__ import annotations

import re

import pytest

from render import page_script as module
from render.page_script import INCLUDE, PAGE_DIR, page_script

ENTRIES = ("measure.js", "slide_layout.js", "slide_text.js")
HELPERS = "helpers.js"  # the part every entry includes, so that they read styles and clipping alike
WHOLE = ("covers.js",)  # scripts of one file, with no parts: they read nothing of the page's layout


@pytest.fixture
def page_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(module, "PAGE_DIR", tmp_path)
    return tmp_path


def test_a_part_goes_in_place_of_its_include_line_at_its_indentation(page_dir):
    (page_dir / "entry.js").write_text("(x) => {\n  const a = 1;\n  // include: part.js\n  return a + b;\n}\n")
    (page_dir / "part.js").write_text("// the part\nconst b = (() => {\n  return 2;\n})();\n")
    assert page_script("entry.js") == (
        "(x) => {\n  const a = 1;\n  // the part\n  const b = (() => {\n    return 2;\n  })();\n  return a + b;\n}\n"
    )


def test_a_missing_part_names_the_file_that_includes_it(page_dir):
    (page_dir / "entry.js").write_text("() => {\n  // include: gone.js\n}\n")
    with pytest.raises(FileNotFoundError, match=r"gone\.js.*included by render/page/entry\.js"):
        page_script("entry.js")


def test_a_part_that_includes_itself_is_refused(page_dir):
    (page_dir / "a.js").write_text("// include: b.js\n")
    (page_dir / "b.js").write_text("// include: a.js\n")
    with pytest.raises(ValueError, match="a.js -> b.js"):
        page_script("a.js")


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_shipped_scripts_compose_whole(entry):
    script = page_script(entry)
    assert "// include:" not in script
    code = [line for line in script.splitlines() if not line.startswith("//")]
    assert code[0].startswith("async ({") and code[-1] == "}"


def test_each_part_is_included_by_one_shipped_script_and_the_helpers_by_each():
    included = {entry: [name for _, name in INCLUDE.findall((PAGE_DIR / entry).read_text())] for entry in ENTRIES}
    assert all(names.count(HELPERS) == 1 for names in included.values()), included
    own = [name for names in included.values() for name in names if name != HELPERS]
    assert sorted(own) == sorted({p.name for p in PAGE_DIR.glob("*.js")} - {*ENTRIES, *WHOLE, HELPERS})


@pytest.mark.parametrize("name", WHOLE)
def test_a_script_of_one_file_has_no_parts(name):
    script = page_script(name)
    assert script == (PAGE_DIR / name).read_text()
    code = [line for line in script.splitlines() if not line.startswith("//")]
    assert re.match(r"(async )?\(", code[0]) and code[-1] == "}"


@pytest.mark.parametrize("entry", ENTRIES)
def test_each_helper_is_defined_once_in_each_shipped_script(entry):
    """No part keeps (or shadows) its own copy of a helper: both scripts run the same one."""
    helpers = re.findall(r"^const (\w+) =", (PAGE_DIR / HELPERS).read_text(), re.MULTILINE)
    assert {"clipOf", "opacity", "style"} <= set(helpers)
    script = page_script(entry)
    for name in helpers:
        assert len(re.findall(rf"\b(?:const|let|var|function) {name}\b", script)) == 1, name
