"""The package graph of DESIGN section 1, the rest of tests/test_layers.py: package imports
have no cycle, and no module uses another package's ``_private`` names. Every import counts,
lazy and ``TYPE_CHECKING`` ones too, read the way tests/test_layers.py reads them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import ROOT, absolute, imported_modules, is_module, layer_of, module_name

# ---------------------------------------------------------------- packages: no cycle
#
# A node is a package under jarvis/ (jarvis.gateway, with its subpackages) or a top-level
# module. The ground and settings layers (BOTTOM, SECTIONS, jarvis.config) are left out:
# the rule above already lets them import only each other, downward, so they close no
# cycle, and a section that lives in a package (safety.channel_policy) does not tie that
# package to every package config reads. The roots are left out too: a command module
# picks and wires the parts of any package, above them all, wherever its file sits.

ROOT_MODULES = frozenset(
    {"jarvis.cli", "jarvis.__main__", "jarvis.console", "jarvis.doctor", "jarvis.preflight"}
)


def is_root(module: str) -> bool:
    """``jarvis`` command modules: cli, doctor, preflight, every ``commands.py``
    (``*_commands.py``) and ``serve_command.py``."""
    last = module.rsplit(".", 1)[-1]
    return (
        module in ROOT_MODULES
        or last in ("commands", "serve_command")
        or (last.endswith("_commands"))
    )


KNOWN_CYCLE_EDGES: frozenset[tuple[str, str]] = frozenset(
    # (issue 34: to remove) the imports that close today's package cycles, each against
    # DESIGN section 1's order; a cycle not broken by one of these fails. Shrink, never grow.
    {
        ("jarvis.safety", "jarvis.tools"),  # approvals reads the tool context
    }
)


def node_of(module: str, root: Path = ROOT) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def package_edges(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) node pairs above the settings layer, each with the module
    imports that make it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted((root / "jarvis").rglob("*.py")):
        module = module_name(path, root)
        if layer_of(module) in ("bottom", "section", "config") or is_root(module):
            continue
        source = path.read_text(encoding="utf-8")
        for target in imported_modules(source, module, path.name == "__init__.py", root):
            if layer_of(target) in ("bottom", "section", "config") or is_root(target):
                continue
            a, b = node_of(module), node_of(target)
            if a != b:
                edges.setdefault((a, b), []).append(f"{module} -> {target}")
    return edges


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), sorted."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_packages_import_each_other_in_no_cycle() -> None:
    edges = package_edges()
    left = cycles(set(edges) - KNOWN_CYCLE_EDGES)
    detail = [
        f"{a} -> {b}: {', '.join(edges[(a, b)][:3])}"
        for component in left
        for (a, b) in sorted(edges)
        if a in component and b in component
    ]
    assert left == [], "package import cycles:\n" + "\n".join(detail)


def test_the_known_cycle_edges_still_exist() -> None:
    """The allow-list shrinks: an edge that is gone comes off it."""
    assert sorted(KNOWN_CYCLE_EDGES - set(package_edges())) == []


def test_the_cycle_finder_sees_a_long_cycle() -> None:
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "e")}
    assert cycles(edges) == [["a", "b", "c"]]


# ---------------------------------------------------------------- another package's privates
#
# A ``_name`` is its package's own: another package (a node as above) asks for a public
# name instead. Found by reading the code: ``from jarvis.x import _name``, ``m._name`` on
# an imported jarvis module, and ``obj._name`` (not on ``self``/``cls``) when only other
# packages' classes define ``_name``, which is how ``self.gateway._books`` is seen.

KNOWN_PRIVATE_USES: frozenset[str] = frozenset()
"""None left (the fleet runner gets the gateway's shared state in its constructor); keep
it empty."""


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_attributes(tree: ast.Module) -> set[str]:
    """The private attributes a module's classes define: names in a class body (methods,
    class attributes, pydantic private fields) and every ``X._name = ...``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    found.add(item.name)
                elif isinstance(item, ast.Assign | ast.AnnAssign):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    found.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
    return {name for name in found if is_private(name)}


def private_uses(root: Path = ROOT) -> list[str]:
    """``module: owner._name`` for each private name a module takes from another node:
    ``from jarvis.x import _name``, ``x._name`` on an imported jarvis module, and
    ``obj._name`` (``obj`` not ``self``/``cls``) for an attribute only other nodes' classes
    define (the owner is then every node that defines it). Vendored code (a ``vendor``
    folder: another project's modules, kept as they are) is not read."""
    trees = {}
    owners: dict[str, set[str]] = {}
    for path in sorted((root / "jarvis").rglob("*.py")):
        if "vendor" in path.relative_to(root).parts:
            continue
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        trees[module] = (tree, path.name == "__init__.py")
        for name in private_attributes(tree):
            owners.setdefault(name, set()).add(node_of(module))
    uses: set[str] = set()
    for module, (tree, is_package) in trees.items():
        mine = node_of(module)
        modules: dict[str, str] = {}  # local name -> the jarvis module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name.startswith("jarvis."):
                        modules[alias.asname] = alias.name
            elif isinstance(node, ast.ImportFrom):
                base = absolute(node, module, is_package)
                for alias in node.names:
                    if is_module(f"{base}.{alias.name}", root):
                        modules[alias.asname or alias.name] = f"{base}.{alias.name}"
                    elif is_private(alias.name) and node_of(base) != mine:
                        uses.add(f"{module}: {base}.{alias.name}")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            value = node.value
            if isinstance(value, ast.Name) and value.id in modules:
                target = modules[value.id]
                if node_of(target) != mine:
                    uses.add(f"{module}: {target}.{node.attr}")
            elif isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            elif owners.get(node.attr) and mine not in owners[node.attr]:
                uses.add(f"{module}: {'|'.join(sorted(owners[node.attr]))}.{node.attr}")
    return sorted(uses)


def test_no_module_uses_another_packages_private_names() -> None:
    assert sorted(set(private_uses()) - KNOWN_PRIVATE_USES) == []


def test_the_known_private_uses_still_exist() -> None:
    """The allow-list shrinks: a use that is gone comes off it."""
    assert sorted(KNOWN_PRIVATE_USES - set(private_uses())) == []


def test_the_private_walk_sees_imports_modules_and_attributes(tmp_path: Path) -> None:
    files = {
        "jarvis/__init__.py": "",
        "jarvis/a/__init__.py": "",
        "jarvis/a/m.py": "_SECRET = 1\nclass A:\n    def _step(self): ...\n    def go(self):\n"
        "        self._state = 0\n        return self._step()\n",
        "jarvis/b/__init__.py": "",
        "jarvis/b/use.py": "from jarvis.a import m\nfrom jarvis.a.m import _SECRET\n"
        "def f(holder):\n    return m._SECRET, holder.a._state, holder.a._step(), "
        "holder._unknown\n",
        "jarvis/a/same.py": "from jarvis.a.m import _SECRET\ndef g(x):\n    return x._state\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert private_uses(tmp_path) == [
        "jarvis.b.use: jarvis.a._state",
        "jarvis.b.use: jarvis.a._step",
        "jarvis.b.use: jarvis.a.m._SECRET",
    ]
