"""What the style keeps (issue 34 part 8): no module of the package over 400 lines and no
function over 60, so each reads in one sitting (vendored files and the web panel's static
assets are not Python modules of ours and are not counted), and every fleet module says
which side it runs on."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jarvis"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "vendor" not in p.parts)


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = lines
    assert long == {}


def test_every_fleet_module_says_which_side_it_runs_on() -> None:
    sides = ("Side: the coordinator.", "Side: the worker.", "Side: both (the coordinator and")
    silent = [
        p.name
        for p in sorted((PACKAGE / "fleet").glob("*.py"))
        if not any(side in (ast.get_docstring(ast.parse(p.read_text())) or "") for side in sides)
    ]
    assert silent == []
