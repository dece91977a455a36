"""The email channel in a child process, for the crash test.

``python -m tests.email_child DATA_DIR`` runs the channel with the settings in
``DATA_DIR/config/settings.json`` until killed. With ``JARVIS_TEST_PAUSE=flag:PATH`` it
hangs just before the first ``$JarvisQueued`` flag is stored (the task is queued, the mail
not flagged); with ``ledger:PATH`` right after the queue write (before the ledger); with
``task:PATH`` right after the task is made (before the queue write). Each writes PATH
first, so the parent knows where it is and kills it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from imapclient import IMAPClient

from jarvis.config import load_settings
from jarvis.events import EventBus
from jarvis.gateway.channels.email.channel import EmailChannel
from jarvis.gateway.channels.email.fetch import QUEUED
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList


def _hang(marker: Path) -> None:
    marker.write_text("paused", encoding="utf-8")
    while True:
        time.sleep(60)


def _install_pause(point: str, marker: Path) -> None:
    if point == "flag":
        add_flags = IMAPClient.add_flags

        def paused(self: IMAPClient, messages: Any, flags: Any, silent: bool = False) -> Any:
            if QUEUED in flags:
                _hang(marker)
            return add_flags(self, messages, flags, silent=silent)

        IMAPClient.add_flags = paused  # type: ignore[method-assign]
    elif point == "task":
        add = TodoList.add

        def added(self: TodoList, *args: Any, **kwargs: Any) -> Any:
            todo = add(self, *args, **kwargs)
            _hang(marker)
            return todo

        TodoList.add = added  # type: ignore[method-assign]
    elif point == "ledger":
        append = MessageQueue.append

        def appended(self: MessageQueue, *args: Any, **kwargs: Any) -> Any:
            message = append(self, *args, **kwargs)
            _hang(marker)
            return message

        MessageQueue.append = appended  # type: ignore[method-assign]


async def main(data_dir: str) -> None:
    pause = os.environ.get("JARVIS_TEST_PAUSE", "")
    if pause:
        point, _, path = pause.partition(":")
        _install_pause(point, Path(path))
    settings = load_settings(data_dir)
    bus = EventBus()
    channel = EmailChannel(
        settings, MessageQueue(settings.data_dir), TodoList(settings.data_dir), bus
    )
    await channel.start()
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
