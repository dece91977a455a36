"""``jarvis replay TASK_ID``: wire a :class:`~jarvis.runs.replay.Replayer` to the desktop.

The replay gets the same screen geometry, input, tool registry and settle as a task,
its own task id (``r-...``), a journal and a step recorder, so it is a run like any
other: ``runs/DATE/REPLAY_ID/`` with ``replay.json`` naming the original.

It goes through a live task's safety path (DESIGN 8): the registry's approval gate (a
recorded ``sudo ...`` or ``alt+f4`` is held again; with nobody to answer it is refused, as
in ``jarvis run``, and the refusal stops the replay), the kill switch, the budget of its
model calls (``--model``), and, from the command line, Ctrl+C, SIGTERM and `jarvis stop`
(``DATA/run.lock`` names the replay while it runs); a cancelled replay exits 130.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.x11 import XDisplay
from jarvis.discovery import STOP_SIGNAL, foreground
from jarvis.events import EventBus
from jarvis.llm.profiles.select import screen_sizer
from jarvis.runs.placement import Regrounder
from jarvis.runs.records import RunRecorder
from jarvis.runs.replay import Replayer, ReplayOutcome, new_replay_id, write_replay_file
from jarvis.runs.report import load_info, locate
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.safety.killswitch import Brakeable, kill_switch
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext

if TYPE_CHECKING:
    from jarvis.runs.journal import JournalWriter


async def replay_task(
    settings: Settings,
    task_id: str,
    *,
    use_model: bool = False,
    bus: EventBus | None = None,
    regrounder: Regrounder | None = None,
    approvals: ApprovalGate | None = None,
    signals: bool = False,
    where: XDisplay,
) -> ReplayOutcome:
    """Replay the latest run of ``task_id`` on the display ``where`` (RunNotFound when
    there is no run).

    ``approvals`` is the gate held calls wait at (default: `jarvis run`'s, with nobody to
    answer); ``signals`` makes Ctrl+C and SIGTERM cancel the replay (the command line)."""
    original = locate(settings.data_dir, task_id)
    info = load_info(original)
    bus = bus or EventBus()
    replay_id = new_replay_id()
    journal = _journal(settings, bus, use_model)
    desktop = Desktop.open(settings, where, sizer=screen_sizer(settings))
    recorder = RunRecorder.for_settings(settings, bus, desktop)
    provider = None
    try:
        if use_model and regrounder is None:
            from jarvis.llm.factory import make_provider
            from jarvis.runs.reground import ModelRegrounder

            provider = make_provider(settings, bus)
            regrounder = ModelRegrounder(provider, settings)
        replayer = _replayer(settings, desktop, replay_id, bus, recorder, regrounder, approvals)
        loop = asyncio.get_running_loop()
        brake = kill_switch(settings, replayer, loop, desktop.where, lambda: desktop.where)
        with brake, _signals(replayer, loop, signals, settings.data_dir, f"replay {task_id}"):
            outcome = await replayer.run(
                original, info.task_id if info else task_id, info.task if info else ""
            )
        folder = journal.folder(replay_id) or _recorded_folder(settings.data_dir, replay_id)
        outcome.folder = folder
        write_replay_file(folder, outcome, original)
        return outcome
    finally:
        if provider is not None:
            await provider.aclose()
        recorder.close()
        journal.close()
        desktop.close()


def _journal(settings: Settings, bus: EventBus, use_model: bool) -> JournalWriter:
    """The replay's journal: its model is none unless ``--model`` regrounds targets."""
    from jarvis.redaction import known_secrets
    from jarvis.runs.journal import JournalWriter, settings_digest

    return JournalWriter(
        settings.data_dir,
        bus,
        channel="replay",
        provider=settings.provider if use_model else "replay",
        model=settings.active_model if use_model else "none (no model)",
        settings_hash=settings_digest(settings),
        secrets=known_secrets(settings),
    )


def _replayer(
    settings: Settings,
    desktop: Desktop,
    replay_id: str,
    bus: EventBus,
    recorder: RunRecorder,
    regrounder: Regrounder | None,
    approvals: ApprovalGate | None,
) -> Replayer:
    """A replayer on ``desktop`` with a task's tools, context and approval gate."""
    screen, stop = desktop.screen, desktop.stop
    settler = desktop.settler
    context = ToolContext.for_task(
        settings,
        replay_id,
        screen=screen,
        input=desktop.input,
        bus=bus,
        stop=stop,
    )
    gate = approvals or ApprovalGate(
        settings.safety, ApprovalStore(bus), channels=settings.channels
    )
    registry = build_registry(settings, approvals=gate)
    return Replayer(
        capture=screen.capture,
        settle=lambda: asyncio.to_thread(settler.wait, stop),
        registry=registry,
        context=context,
        bus=bus,
        recorder=recorder,
        windows=desktop.windows,
        phash_bits=settings.runs.replay_phash_distance,
        match_score=settings.runs.replay_match_score,
        search_px=settings.runs.replay_search_px,
        regrounder=regrounder,
        stop=stop,
    )


@contextmanager
def _signals(
    target: Brakeable, loop: asyncio.AbstractEventLoop, on: bool, data_dir: Path, what: str
) -> Iterator[None]:
    """Ctrl+C, SIGTERM and `jarvis stop` (``DATA/run.lock`` names this process while
    inside) cancel ``target`` while inside (as for `jarvis run`)."""
    if not on:
        yield
        return
    loop.add_signal_handler(signal.SIGINT, target.cancel, "ctrl+c")
    loop.add_signal_handler(signal.SIGTERM, target.cancel, "signal")
    loop.add_signal_handler(STOP_SIGNAL, target.cancel, "cli")  # `jarvis stop`
    try:
        with foreground(data_dir, what):
            yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
        loop.remove_signal_handler(STOP_SIGNAL)


def _recorded_folder(data_dir: Path, replay_id: str) -> Path:
    from jarvis.runs.report import locate

    return locate(data_dir, replay_id)
