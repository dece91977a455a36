"""`jarvis record NAME`: record a person doing a task until ctrl+c or the stop chord, write
``DATA/recordings/SLUG/skill.md`` and keep it in long-term memory as a skill."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    record = subparsers.add_parser(
        "record", help="record yourself doing a task; it becomes a skill Jarvis recalls"
    )
    record.add_argument("name", help="what the task is, in words (names the recording)")
    record.add_argument(
        "--stop-key", default="ctrl+alt+r", help="the chord that ends the recording"
    )
    record.add_argument(
        "--no-memory", action="store_true", help="write the skill file only, not to memory"
    )
    record.set_defaults(handler=cmd_record)


def cmd_record(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.desktop.a11y.reader import A11yReader
    from jarvis.desktop.x11 import XDisplay
    from jarvis.recording.recorder import Recorder
    from jarvis.recording.skill_file import load_recording, slug_of, write_recording
    from jarvis.recording.xrecord import RecordUnavailable

    try:
        slug_of(args.name)
    except ValueError as exc:
        print(f"jarvis record: {exc}")
        return EXIT_USAGE
    where = XDisplay.from_env()
    if not where.name:
        print("jarvis record: no X display (DISPLAY is not set)")
        return EXIT_USAGE
    bus = settings.a11y_session_bus or where.session_bus
    reader = A11yReader(bus, timeout=settings.tree_timeout_ms / 1000) if bus else None
    recorder = Recorder(where, reader, args.stop_key)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"jarvis record: recording; stop with ctrl+c or {args.stop_key}")
    try:
        recording = recorder.run(stop)
    except RecordUnavailable as exc:
        print(f"jarvis record: {exc}")
        return EXIT_FAILED
    finally:
        signal.signal(signal.SIGINT, previous)
        recorder.close()
    if not recording.steps:
        print("jarvis record: nothing was done; no recording written")
        return EXIT_FAILED
    path = write_recording(settings.data_dir, args.name, recording)
    _, data = load_recording(settings.data_dir, args.name)
    print(f"jarvis record: {len(recording.steps)} steps in {path}")
    if not args.no_memory:
        from jarvis.recording.session import remember_recording

        print(f"jarvis record: {remember_recording(settings, data)}")
    return EXIT_OK
