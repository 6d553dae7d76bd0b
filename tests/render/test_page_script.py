"""In-page scripts: an entry file and the parts it includes make one function for page.evaluate."""

from __future__ import annotations

import pytest

from render import page_script as module
from render.page_script import INCLUDE, PAGE_DIR, page_script


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


@pytest.mark.parametrize("entry", ["measure.js", "slide_layout.js"])
def test_the_shipped_scripts_compose_whole(entry):
    script = page_script(entry)
    assert "// include:" not in script
    code = [line for line in script.splitlines() if not line.startswith("//")]
    assert code[0].startswith("async ({") and code[-1] == "}"


def test_every_part_is_included_by_one_shipped_script():
    entries = {"measure.js", "slide_layout.js"}
    included = [name for entry in entries for _, name in INCLUDE.findall((PAGE_DIR / entry).read_text())]
    assert sorted(included) == sorted({p.name for p in PAGE_DIR.glob("*.js")} - entries)
