"""Fleet never imports eval (DESIGN.md section 1): an eval run reaches a worker as a task
of a kind (:mod:`jarvis.fleet.kinds`) whose handler the worker's command, a root, wires
in. Every import counts, lazy and ``TYPE_CHECKING`` ones too (the walk of
``tests/test_layers.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.test_layers import PACKAGE, ROOT, imported_modules, module_name

ROOTS = frozenset({"jarvis.fleet.commands"})
"""The fleet's root: it picks and wires the parts (what an eval worker runs)."""


def eval_imports(root: Path = ROOT) -> list[str]:
    wrong = []
    for path in sorted((root / "jarvis" / "fleet").rglob("*.py")):
        module = module_name(path, root)
        if module in ROOTS:
            continue
        source = path.read_text(encoding="utf-8")
        for target in sorted(imported_modules(source, module, path.name == "__init__.py", root)):
            if target == "jarvis.eval" or target.startswith("jarvis.eval."):
                wrong.append(f"{module} imports {target}")
    return wrong


def test_nothing_in_the_fleet_imports_eval() -> None:
    assert eval_imports() == []


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    for name in ("jarvis/__init__.py", "jarvis/eval/__init__.py", "jarvis/eval/remote.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    bad = tmp_path / "jarvis/fleet/worker.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f():\n    from jarvis.eval.remote import run_claimed\n")
    (tmp_path / "jarvis/fleet/commands.py").write_text("from jarvis.eval import remote\n")
    assert eval_imports(tmp_path) == ["jarvis.fleet.worker imports jarvis.eval.remote"]


def test_the_roots_named_exist() -> None:
    assert {module_name(p) for p in PACKAGE.rglob("*.py")} >= ROOTS
