from __future__ import annotations

from pathlib import Path

import pytest

from agents.manuscript import ManuscriptConstraints, inspect_manuscript
from core.markdown_slides import split_slides
from core.seams.steps import ManuscriptReport

EN = """# Why sleep matters

Adults need seven to nine hours of sleep. Memory consolidation happens during deep sleep.

---

## What happens at night

![Sleep stages over one night](assets/stages.png)

The brain cycles through light, deep and REM sleep about five times.
"""

ZH = """# 睡眠为什么重要

成年人每天需要七到九个小时的睡眠，深度睡眠阶段会巩固记忆。

---

## 夜间发生了什么

![一夜的睡眠阶段](assets/stages.png)

大脑整夜在浅睡、深睡和快速眼动睡眠之间循环大约五次。
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "stages.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "assets" / "other.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return tmp_path


def _write(workspace: Path, text: str) -> Path:
    path = workspace / "manuscript.md"
    path.write_text(text, encoding="utf-8")
    return path


def _codes(result: ManuscriptReport) -> list[tuple[str, int | None]]:
    return [(i.code, i.slide) for i in result.issues]


@pytest.mark.parametrize(("text", "lang"), [(EN, "en"), (ZH, "zh")])
def test_clean_manuscript(workspace: Path, text: str, lang: str) -> None:
    result = inspect_manuscript(
        _write(workspace, text),
        workspace,
        {"slides_min": 2, "slides_max": 5, "language": lang},
    )
    assert result == ManuscriptReport(2, lang, ())


def test_separators_inside_code_fences_do_not_split() -> None:
    text = "# One\n\n```yaml\na: 1\n---\nb: 2\n```\n\n---\n\n# Two\n~~~~\n---\n~~~~\n"
    slides = split_slides(text)
    assert len(slides) == 2 and "b: 2" in slides[0] and "~~~~" in slides[1]


def test_leading_and_trailing_separators_are_not_slides() -> None:
    assert split_slides("---\n# One\n---\n# Two\n---\n") == ["# One", "# Two"]
    assert split_slides("# One\n --- \n# Two") == ["# One\n --- \n# Two"]  # not exactly ---


def test_each_issue_code(workspace: Path) -> None:
    text = """# Intro
![Stages](assets/stages.png)
---
<!-- nothing yet -->
---
# Pictures
![](assets/other.png)
![Remote chart](https://example.com/chart.png)
![Missing](assets/missing.png)
![Escaping](../elsewhere.png)
<img src="assets/stages.png" alt="Stages again">
`![not an image](assets/nope.png)`
"""
    result = inspect_manuscript(_write(workspace, text), workspace)
    assert result.slides == 3
    assert _codes(result) == [
        ("empty_slide", 2),
        ("missing_alt", 3),
        ("external_url", 3),
        ("missing_asset", 3),
        ("missing_asset", 3),
        ("duplicate_image", 3),
    ]
    details = [i.detail for i in result.issues]
    assert "outside the workspace" in details[4] and "slide 1" in details[5]


def test_constraints_on_count_and_language(workspace: Path) -> None:
    path = _write(workspace, EN)
    result = inspect_manuscript(
        path,
        workspace,
        ManuscriptConstraints(slides_min=5, slides_max=10, language="zh-CN"),
    )
    assert _codes(result) == [("slide_count", None), ("language", None)]
    assert result.issues[0].detail == "2 slides; the task asks for 5-10"
    exact = inspect_manuscript(path, workspace, {"slides_min": 3, "slides_max": 3, "language": "English"})
    assert [i.detail for i in exact.issues] == ["2 slides; the task asks for 3"]


def test_bad_input(workspace: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        inspect_manuscript(workspace / "nope.md", workspace)
    (workspace / "bin.md").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ValueError, match="not UTF-8"):
        inspect_manuscript(workspace / "bin.md", workspace)
    with pytest.raises(ValueError, match="unknown manuscript constraints: pages"):
        inspect_manuscript(_write(workspace, EN), workspace, {"pages": 3})
