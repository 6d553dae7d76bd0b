"""The in-page scripts under `render/page/`, each one function for Playwright's `page.evaluate`.

`page.evaluate` takes a single function, so a script too long for one file is written as an entry
file that names its parts on lines of their own, `// include: NAME.js`; each such line is replaced
by the part's text, indented like the line. A part is a piece of the entry's function body, not a
module: it shares the function's scope (its arguments, caches and helpers).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

PAGE_DIR = Path(__file__).with_name("page")
INCLUDE = re.compile(r"^([ \t]*)// include: (\S+\.js)[ \t]*$", re.MULTILINE)


def page_script(name: str, _including: tuple[str, ...] = ()) -> str:
    """The script `render/page/<name>` with its parts put in place of its include lines."""
    if name in _including:
        raise ValueError(f"render/page/{name} includes itself through {' -> '.join(_including)}")
    path = PAGE_DIR / name
    if not path.is_file():
        included_by = f" (included by render/page/{_including[-1]})" if _including else ""
        raise FileNotFoundError(f"no in-page script {path}{included_by}")

    def inline(match: re.Match[str]) -> str:
        part = page_script(match.group(2), (*_including, name))
        return textwrap.indent(part.rstrip("\n"), match.group(1))

    return INCLUDE.sub(inline, path.read_text(encoding="utf-8"))
