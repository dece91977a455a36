"""The gateway runs its tasks through the Runner it is given (DESIGN section 10).

With a fake runner (the protocol, in the test), the gateway still routes messages onto
todos.md and wakes the runner, and hands cancel, stop, settle, the screen of a task and the
workers list to it; the facade does too. And the gateway does not know the fleet: no
module of ``jarvis/gateway`` imports ``jarvis.fleet`` (``serve_command``, a root, picks the
runner), and neither ``gateway.py`` nor ``service.py`` names it.
"""

from __future__ import annotations

import ast
import asyncio
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop.x11 import XDisplay
from jarvis.events import ReplyReady, TaskStarted
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.gateway.message_format import Message
from jarvis.gateway.runner import Runner, Shared, WorkerInfo
from jarvis.gateway.service import DaemonService
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel, Reply, fake_model_fixture

__all__ = ["fake_model_fixture"]

ROOT = Path(__file__).resolve().parent.parent
GATEWAY = ROOT / "jarvis" / "gateway"
ROOTS = {"serve_command.py"}
"""Modules of jarvis/gateway that are roots (DESIGN section 1): they pick the parts."""
NEW_TASK = Reply(text='{"action": "new", "title": "", "priority": "normal"}')
WORKER = WorkerInfo(
    name="w1",
    host="here",
    display=":5",
    size="800x600",
    version="1",
    state="idle",
    task=None,
    last_heartbeat=datetime(2026, 1, 1, tzinfo=UTC),
)


class FakeRunner:
    """The protocol, recording what the gateway asks of it."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.calls: list[tuple[str, ...]] = []
        self.woken = 0
        self.settled: list[Message] = []
        self._stop = asyncio.Event()

    async def run(self) -> None:
        self.calls.append(("run",))
        while not self._stop.is_set():
            waiters = [asyncio.create_task(self.shared.work.wait()), self._stopped()]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waiters:
                waiter.cancel()
            if self.shared.work.is_set():
                self.shared.work.clear()
                self.woken += 1

    def _stopped(self) -> asyncio.Task[bool]:
        return asyncio.create_task(self._stop.wait())

    def stop(self) -> None:
        self.calls.append(("stop",))
        self._stop.set()

    async def cancel(self, task_id: str, by: str) -> bool:
        self.calls.append(("cancel", task_id, by))
        return True

    async def settle(self) -> list[Message]:
        self.calls.append(("settle",))
        return self.settled

    def screen(self, task_id: str) -> str | None:
        self.calls.append(("screen", task_id))
        return "worker/w1" if task_id == "T002" else "main"

    async def workers(self) -> list[WorkerInfo]:
        self.calls.append(("workers",))
        return [WORKER]


async def until(condition: Callable[[], Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.02)


async def test_the_gateway_routes_and_hands_the_rest_to_its_runner(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_model.set_default(lambda request: NEW_TASK)
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    made: list[FakeRunner] = []

    async def open_fake(shared: Shared, stack: AsyncExitStack) -> Runner:
        made.append(FakeRunner(shared))
        return made[-1]

    options = GatewayOptions(poll_interval_s=0.1, settle_s=0.05)
    gateway = Gateway(settings, options=options, where=XDisplay(":0"), runner=open_fake)
    service = DaemonService(gateway)
    replies: list[ReplyReady] = []
    gateway.bus.subscribe(replies.append, ReplyReady)
    run = asyncio.create_task(gateway.run())
    try:
        await until(lambda: gateway.ready.is_set() or run.done())
        (runner,) = made
        assert runner.calls[:2] == [("settle",), ("run",)]  # recovery first, then it runs
        assert runner.shared.books is not None and runner.shared.todos is gateway.todos

        # messages are routed onto todos.md, and the runner is woken for them
        first = await service.submit("open the calculator", "api")
        second = await service.submit("then the notes", "api")
        await until(lambda: len(gateway.todos.all()) == 2 and runner.woken > 0)
        assert (await service.task_of_message(first.message_id)).id == "T001"  # type: ignore[union-attr]
        assert (await service.task_of_message(second.message_id)).id == "T002"  # type: ignore[union-attr]

        # a person's cancel: todos.md says so, and the runner is told who
        cancelled = await service.cancel("T001", "web")
        assert cancelled.status == "cancelled"
        assert ("cancel", "T001", "web") in runner.calls

        # the screen of a task, the running task and the workers come from the runner
        gateway.todos.mark_in_progress("T002")
        gateway.bus.emit(TaskStarted(task_id="T002", task="then the notes"))
        assert service.screen("T002") == "worker/w1"
        assert service.running_task() is None  # it runs on a worker, not on this screen
        assert await service.workers() == [WORKER]

        # a stop: the runner is told first (the brake's name), and only once
        runner.calls.clear()
        assert await service.stop("tui") is True
        assert runner.calls.count(("cancel", "T002", "tui")) == 1
        assert gateway.todos.get("T002").status == "cancelled"  # type: ignore[union-attr]
    finally:
        gateway.stop()
        await asyncio.wait_for(run, 30)
    assert ("stop",) in runner.calls
    assert service.screen_hold() is None  # no agent of this process drives the screen


# --- the gateway does not know the fleet --------------------------------------------
def imported(tree: ast.AST) -> list[str]:
    """Every module an import names, wherever it is (lazy, TYPE_CHECKING...)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def names(tree: ast.AST) -> list[str]:
    """Every identifier the code uses or defines (not its prose)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(node.name)
        elif isinstance(node, ast.arg | ast.keyword):
            found.append(node.arg or "")
        elif isinstance(node, ast.alias):
            found += [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return found


def test_no_module_of_the_gateway_imports_the_fleet() -> None:
    modules = [p for p in GATEWAY.rglob("*.py") if p.name not in ROOTS]
    assert len(modules) > 20
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules
        for name in imported(ast.parse(path.read_text()))
        if name == "jarvis.fleet" or name.startswith("jarvis.fleet.")
    ]
    assert found == []


@pytest.mark.parametrize("module", ["gateway.py", "service.py"])
def test_the_gateway_and_its_facade_do_not_name_the_fleet(module: str) -> None:
    source = (GATEWAY / module).read_text()
    found = [n for n in names(ast.parse(source)) if "fleet" in n.lower()]
    assert found == []
    assert "fleet" not in source.lower()  # nor its prose: the runner is all they know


def test_the_checks_see_a_lazy_import_and_a_name() -> None:
    tree = ast.parse(
        "def f():\n    from jarvis.fleet.serving import FleetService\n    return g.fleet\n"
    )
    assert "jarvis.fleet.serving" in imported(tree)
    assert {"FleetService", "fleet"} <= set(names(tree))
