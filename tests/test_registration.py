"""One way to register a component: an explicit list, imported where it is used; importing a module registers nothing.

Tools are each module's `TOOLS` (listed in agents/tools/toolsets.py), research backends a dict per
family, defect codes one table literal, the local server's chat format is added when the server
starts. This scan keeps it so: no product module calls anything named `register` while it is
imported, and no decorator there adds a tool to a registry.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

import pytest

from core.config import PROJECT_ROOT

NOT_PRODUCT = {"tests", "benchmarks", "runs", "data", "docs", "configs"}
# Registration that an outside framework requires at import, by file, with the reason.
EXEMPT = {
    "train/swift_plugin.py": "MS-SWIFT imports an --external_plugins file for the templates it registers",
}


def product_modules() -> list[Path]:
    tops = [p for p in PROJECT_ROOT.iterdir() if p.is_dir() and p.name not in NOT_PRODUCT and not p.name.startswith(".")]
    return sorted(path for top in tops for path in top.rglob("*.py") if "__pycache__" not in path.parts)


def names(node: ast.expr) -> Iterator[str]:
    """Every name along a callee or decorator: `a.b.register("x")(f)` gives register, b, a."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            yield node.attr
            node = node.value
        else:
            if isinstance(node, ast.Name):
                yield node.id
            return


def run_on_import(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes that run when the module is imported: module and class bodies, not function bodies."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += [*node.decorator_list, *node.args.defaults, *filter(None, node.args.kw_defaults)]
        elif not isinstance(node, ast.Lambda):
            pending += ast.iter_child_nodes(node)


def registrations(source: str) -> list[str]:
    """`line: what` for each call named like register, and each tool decorator, that runs on import."""
    found = []
    for node in run_on_import(ast.parse(source)):
        if isinstance(node, ast.Call) and any("register" in name.lower() for name in names(node)):
            found.append(f"{node.lineno}: a call of {'.'.join(reversed(list(names(node))))}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                if any(name == "tool" or "register" in name.lower() for name in names(decorator)):
                    found.append(f"{decorator.lineno}: @{'.'.join(reversed(list(names(decorator))))} on {node.name}")
    return found


def test_no_product_module_registers_anything_when_imported() -> None:
    modules = product_modules()
    assert PROJECT_ROOT / "agents" / "tools" / "toolsets.py" in modules  # the scan sees the product
    found = {
        str(path.relative_to(PROJECT_ROOT)): registrations(path.read_text(encoding="utf-8"))
        for path in modules
        if str(path.relative_to(PROJECT_ROOT)) not in EXEMPT
    }
    assert not {path: lines for path, lines in found.items() if lines}, "list it explicitly instead (docs/extending.md)"


def test_each_exemption_is_still_needed() -> None:
    for path in EXEMPT:
        assert registrations((PROJECT_ROOT / path).read_text(encoding="utf-8")), f"{path} registers nothing now: drop it"


@pytest.mark.parametrize(
    "source",
    [
        "@tool('presenter')\nasync def word_count(ctx, path): ...",  # the old tool decorator
        "@REGISTRY.tool(*ROLES, truncate=False)\nasync def read_file(ctx, path): ...",
        "@SEARCH.register('brave', key_of='brave')\nasync def search_brave(r, q, n, t): ...",
        "PAPERS.register('arxiv')(ArxivPapers())",
        "register(DefectCode('glare', Source.slide, 'style', 'minor', 'a box glares', 'tone it down'))",
        "@llama_chat_format.register_chat_completion_handler(BOUNDED)\ndef handler(llama): ...",
        "class Papers:\n    @registry.register('x')\n    def search(self): ...",
        "if True:\n    TABLE = register_all(ROWS)",
    ],
)
def test_the_scan_catches_registration_on_import(source: str) -> None:
    assert registrations(source)


def test_the_scan_lets_registration_at_run_time_pass() -> None:
    source = "def install():\n    registry.register_chat_completion_handler(BOUNDED, handler, overwrite=True)\n"
    assert not registrations(source)


def test_no_module_imports_tools_for_their_side_effect() -> None:
    assert not (PROJECT_ROOT / "agents" / "toolbox.py").exists()
