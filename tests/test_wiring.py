"""Objects are built whole (DESIGN section 1): what one needs (the hold, the approver, the
pointer targets, the long-term store) goes into its constructor, never set afterwards, so
nothing probes for it with ``getattr``.

An ast walk over every module under jarvis/: an attribute named for one of those parts is
assigned only as ``self.NAME = ...`` in the object's own ``__init__``, and no ``getattr``,
``setattr``, ``hasattr`` or ``delattr`` names one (the callback form
``stack.callback(setattr, obj, "approve", ...)`` too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jarvis"

WIRED = frozenset({"screen_hold", "hold", "held", "approve", "targets", "long_term"})
"""The parts that were once set on an object after it was made."""

REFLECTION = frozenset({"getattr", "setattr", "hasattr", "delattr"})

ALLOWED = frozenset(
    {
        # a copied settings block folded at load (the old channel keys moved in): data
        # being built, not an object being wired
        "out[name].approve",
    }
)


def _own_init(stack: list[ast.AST], target: ast.Attribute) -> bool:
    """``self.NAME = ...`` directly in a method called ``__init__``."""
    if not (isinstance(target.value, ast.Name) and target.value.id == "self"):
        return False
    functions = [n for n in stack if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return bool(functions) and functions[-1].name == "__init__"


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in _flatten(target)]
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return _flatten(node.target)
    return []


def _flatten(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for item in target.elts for t in _flatten(item)]
    return [target]


def _reflects_on_wired(call: ast.Call) -> bool:
    """A reflective call (or a call handed a reflective builtin) naming a wired part."""
    names = [call.func, *call.args]
    if not any(isinstance(n, ast.Name) and n.id in REFLECTION for n in names):
        return False
    return any(isinstance(a, ast.Constant) and a.value in WIRED for a in call.args)


def violations(source: str, where: str = "<string>") -> list[str]:
    """Each assignment or reflective call in ``source`` that wires a part afterwards."""
    found: list[str] = []

    def visit(node: ast.AST, stack: list[ast.AST]) -> None:
        for target in _targets(node):
            if not (isinstance(target, ast.Attribute) and target.attr in WIRED):
                continue
            text = ast.unparse(target)
            if text not in ALLOWED and not _own_init(stack, target):
                found.append(f"{where}:{node.lineno}: {text} = ... (set after construction)")
        if isinstance(node, ast.Call) and _reflects_on_wired(node):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)} (probes a wired part)")
        for child in ast.iter_child_nodes(node):
            visit(child, [*stack, node])

    visit(ast.parse(source), [])
    return found


@pytest.mark.parametrize(
    "source",
    [
        "agent.screen_hold = hold",
        "desktop.input.hold = hold.held",
        "provider.approve = approver(gate)",
        "self.brain.targets = []",
        "agent.hippocampus.long_term = memory",
        "def later(self):\n    self.hold = None",
        "hold = getattr(agent, 'screen_hold', None)",
        "stack.callback(setattr, provider, 'approve', deny)",
        "setattr(x, 'long_term', None)",
        "a, b.targets = 1, 2",
    ],
)
def test_the_walk_finds_a_part_wired_afterwards(source: str) -> None:
    assert violations(source)


@pytest.mark.parametrize(
    "source",
    [
        "class A:\n    def __init__(self, hold):\n        self.hold = hold",
        "class A:\n    async def __init__(self, approve):\n        self.approve = approve",
        "hold = agent.screen_hold",
        "getattr(os, 'O_CLOEXEC', 0)",
        "out[name].approve = rules",
        "targets: list[int] = []",
    ],
)
def test_the_walk_lets_a_constructor_keep_what_it_is_given(source: str) -> None:
    assert violations(source) == []


def test_no_module_wires_a_part_after_construction() -> None:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        found += violations(path.read_text(encoding="utf-8"), where)
    assert found == [], "\n".join(found)
