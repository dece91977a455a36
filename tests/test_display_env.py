"""Nothing in jarvis/ writes the process's ``DISPLAY``, and it is read in one place only
(:meth:`jarvis.desktop.x11.XDisplay.from_env`, called at start-up and passed down as a
Desktop's display): the person's display, ``--sandbox``'s and a channel's private display
are Desktops made for a display, never a swap of the environment. Checked on the source
with ``ast``: an ``os.environ`` subscript, an ``environ.get/pop/setdefault/update`` or a
``getenv/putenv/unsetenv`` call that names ``DISPLAY``, and every ``environ.update`` or
``putenv`` at all (its keys may come from a variable)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "jarvis"
READ_AT = {("desktop/x11.py", "from_env")}
"""(module, function) where DISPLAY may be read."""
START_UP = {
    "cli.py",  # jarvis run
    "gateway/serve_command.py",  # jarvis serve
    "fleet/commands.py",  # jarvis worker
    "doctor.py",  # jarvis doctor
    "calibrate/commands.py",  # jarvis calibrate
    "runs/report_commands.py",  # jarvis replay
    "eval/child.py",  # an eval run's child process, run as a script
    "recording/commands.py",  # jarvis record
    "eval/osworld/profile.py",  # an OSWorld task's setup script, run in the task's display
}
"""The command entries that may call ``XDisplay.from_env()``: each reads the display once
when the command starts and passes it down; everything below takes a display."""


def _names_display(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == "DISPLAY" for n in ast.walk(node))


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _touches(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """(node, "read" | "write") for each use of the environment's DISPLAY in ``tree``."""
    found: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            if _names_display(node.slice):
                kind = "read" if isinstance(node.ctx, ast.Load) else "write"
                found.append((node, kind))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id
            on_environ = isinstance(func, ast.Attribute) and _is_environ(func.value)
            if name in ("putenv", "unsetenv") or (on_environ and name == "update"):
                found.append((node, "write"))  # keys from anywhere: none at all
            elif on_environ and name in ("pop", "setdefault") and _names_display(node):
                found.append((node, "write"))
            elif ((on_environ and name == "get") or name == "getenv") and _names_display(node):
                found.append((node, "read"))
    return found


def _functions(tree: ast.AST) -> dict[ast.AST, str]:
    """Each node -> the name of the innermost function it is in ("" at module level)."""
    owner: dict[ast.AST, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else name
            )
            owner[child] = inner
            visit(child, inner)

    visit(tree, "")
    return owner


def _uses() -> list[tuple[str, str, int, str]]:
    uses = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        owner = _functions(tree)
        module = path.relative_to(ROOT).as_posix()
        for node, kind in _touches(tree):
            uses.append((module, owner.get(node, ""), getattr(node, "lineno", 0), kind))
    return uses


def test_no_module_writes_display() -> None:
    writes = [u for u in _uses() if u[3] == "write"]
    assert writes == []


def test_display_is_read_in_one_start_up_place() -> None:
    reads = [u for u in _uses() if u[3] == "read"]
    assert {(module, function) for module, function, _, _ in reads} == READ_AT
    assert len(reads) == 1


def _from_env_calls(tree: ast.AST) -> list[ast.Call]:
    """Calls of ``XDisplay.from_env()`` (also as ``x11.XDisplay.from_env()``)."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "from_env"
        and (
            (isinstance(node.func.value, ast.Name) and node.func.value.id == "XDisplay")
            or (isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "XDisplay")
        )
    ]


def test_from_env_is_called_only_at_start_up() -> None:
    """Nothing below a command's entry falls back to the process's display: a constructor
    or function that works on a display is given one."""
    callers = set()
    for path in sorted(ROOT.rglob("*.py")):
        if _from_env_calls(ast.parse(path.read_text(), str(path))):
            callers.add(path.relative_to(ROOT).as_posix())
    assert callers <= START_UP, sorted(callers - START_UP)
    assert {"cli.py", "gateway/serve_command.py"} <= callers


def test_the_check_sees_from_env_calls() -> None:
    sample = ast.parse(
        "a = where or XDisplay.from_env()\n"
        "b = x11.XDisplay.from_env().name\n"
        "c = Settings.from_env()\n"
    )
    assert len(_from_env_calls(sample)) == 2


def test_the_check_sees_a_write_and_a_read() -> None:
    """The walker itself: each form it looks for is found in a sample."""
    sample = ast.parse(
        "import os\n"
        "os.environ['DISPLAY'] = ':9'\n"
        "os.environ.update({'DISPLAY': ':9'})\n"
        "os.putenv('DISPLAY', ':9')\n"
        "os.environ.pop('DISPLAY', None)\n"
        "x = os.environ.get('DISPLAY')\n"
        "y = os.getenv('DISPLAY')\n"
        "z = os.environ['DISPLAY']\n"
        "w = os.environ.get('HOME')\n"
    )
    kinds = sorted(kind for _, kind in _touches(sample))
    assert kinds == ["read", "read", "read", "write", "write", "write", "write"]
