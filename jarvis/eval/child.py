"""One eval task's agent, in its own process on the task's display.

Every task runs in a fresh process whose agent's Desktop is made for the task's display
(``DISPLAY`` and ``XAUTHORITY`` of the environment the runner gives it, or
``WAYLAND_DISPLAY`` and ``SWAYSOCK`` for a private sway, and
``DBUS_SESSION_BUS_ADDRESS``: the display's session, whose accessibility bus the tree is
read from when the ``observation`` setting asks for it). The runner forks
it from a forkserver that has imported the agent already (:func:`run_in_process`), which
saves seconds of imports per task; it can also run on its own::

    python -m jarvis.eval.child '{"task_file": ..., "task_id": ..., "data_dir": ...,
                                  "provider": "oracle", "model": null, "delay_s": 0}'

It prints one JSON line: the task's outcome.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.desktop.x11 import XDisplay

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.backend import Where

SESSION_KEYS = (
    "DISPLAY",
    "XAUTHORITY",
    "DBUS_SESSION_BUS_ADDRESS",
    "WAYLAND_DISPLAY",
    "SWAYSOCK",
)
"""The display's part of the environment: it goes to the agent's Desktop, not os.environ."""


def task_settings(spec: dict[str, Any], steps: int) -> Settings:
    """The settings the agent of ``spec`` runs with (``steps``: the task's step budget);
    the runner reads them too, to start the display the way they ask (a tree: a bus)."""
    from jarvis.config import PROVIDERS, load_chosen

    provider_name = spec.get("provider") or None
    model_provider = provider_name if provider_name in PROVIDERS else None
    return load_chosen(
        spec["data_dir"],
        model_provider,
        spec.get("model") if provider_name != "oracle" else None,
        max_steps=steps,
        long_term_memory=False,
        max_retries=spec.get("max_retries"),
    )


async def run_child(spec: dict[str, Any], where: Where) -> dict[str, Any]:
    """The task of ``spec`` on the display ``where``."""
    from jarvis.agent.factory import build_agent
    from jarvis.eval.oracle import OracleProvider
    from jarvis.eval.suite import load_task
    from jarvis.events import EventBus
    from jarvis.redaction import known_secrets
    from jarvis.runs.journal import JournalWriter, settings_digest

    task = load_task(Path(spec["task_file"]))
    provider_name = spec.get("provider") or None
    settings = task_settings(spec, spec.get("max_steps") or task.budget.steps)
    bus = EventBus()
    oracle = None
    if provider_name == "oracle":
        oracle = OracleProvider(task.oracle, delay_s=float(spec.get("delay_s") or 0.0))
        journal = JournalWriter(
            settings.data_dir,
            bus,
            channel="eval",
            provider="oracle",
            model="oracle",
            settings_hash=settings_digest(settings),
            secrets=known_secrets(settings),
        )
    else:
        journal = JournalWriter.for_settings(settings, bus, channel="eval")
    try:
        async with build_agent(settings, bus, provider=oracle, where=where) as agent:
            outcome = await agent.run(task.task, task_id=spec["task_id"])
    finally:
        journal.close()
    return outcome.model_dump(mode="json")


def run_in_process(spec: dict[str, Any], env: dict[str, str], conn: Any) -> None:
    """The target of a forkserver process: the task's display, then the agent."""
    import os
    import traceback

    from jarvis.desktop.backend import display_in

    where = display_in(env)  # the task's X display, or its private sway
    for key, value in env.items():  # WORK, SUITE: the task's; the display goes to its Desktop
        if key not in SESSION_KEYS:
            os.environ[key] = value
    try:
        conn.send({"outcome": asyncio.run(run_child(spec, where))})
    except BaseException as exc:  # the parent reports it as the run's failure
        conn.send({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
    finally:
        conn.close()


def main() -> int:
    spec = json.loads(sys.argv[1])
    outcome = asyncio.run(run_child(spec, XDisplay.from_env()))  # read once, at start-up
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
