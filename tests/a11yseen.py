"""A desktop that reads the accessibility tree, with the element tools, for the a11y tests.

:func:`seen_on` opens a Desktop on a test display with ``observation = screenshot+tree``
reading through a private accessibility session; :class:`Seen` looks at the tree (again
and again until a condition holds) and runs the element tools as the agent would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jarvis.config import Settings
from jarvis.desktop.a11y import Element, Tree
from jarvis.desktop.a11y.session import A11ySession
from jarvis.desktop.a11y.view import ElementView
from jarvis.desktop.desktop import Desktop
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import ToolResult
from tests.xserver import Xvfb


@dataclass
class Seen:
    desktop: Desktop
    registry: ToolRegistry
    ctx: ToolContext

    @property
    def view(self) -> ElementView:
        assert self.desktop.elements is not None
        return self.desktop.elements

    def look(self) -> tuple[str, Tree | None]:
        observation = self.view.look(self.desktop.screen.capture())
        return observation.tree, self.view.tree

    def until(self, ok: Callable[[Tree], bool], timeout: float = 10.0) -> Tree:
        """The first tree (looked at again and again) for which ``ok`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            _, tree = self.look()
            if tree is not None and ok(tree):
                return tree
            assert time.monotonic() < deadline, f"no such tree; last: {tree and tree.render(3000)}"
            time.sleep(0.05)

    def run(self, name: str, args: dict[str, Any]) -> ToolResult:
        return asyncio.run(self.registry.execute(name, args, self.ctx))


def find(tree: Tree, role: str, name: str) -> Element:
    found = [e for e in tree.elements if e.role == role and e.name == name]
    assert found, f"no {role} {name!r} in\n{tree.render(4000)}"
    return found[0]


@contextmanager
def seen_on(xserver: Xvfb, session: A11ySession, tmp_path: Path) -> Iterator[Seen]:
    settings = Settings(data_dir=tmp_path, observation="screenshot+tree")
    desktop = Desktop.open(settings, xserver.where, session_bus=session.address)
    registry = build_registry(settings, presets=[])
    ctx = ToolContext.for_task(
        settings, "t-a11y", screen=desktop.screen, input=desktop.input, elements=desktop.elements
    )
    try:
        yield Seen(desktop, registry, ctx)
    finally:
        desktop.close()
