"""``jarvis inbox add TEXT`` and ``jarvis inbox list``: the message queue from the shell."""

from __future__ import annotations

import argparse
import sys
from datetime import date
from typing import Any

from jarvis.config import Settings
from jarvis.gateway.markdown import format_priority, format_timestamp, parse_priority
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _priority(value: str) -> str:
    try:
        parse_priority(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def register(subparsers: Any) -> None:
    """Add the ``inbox`` command to the ``jarvis`` parser."""
    inbox = subparsers.add_parser("inbox", help="add messages for Jarvis, or list the queue")
    inbox.set_defaults(handler=lambda args, settings: _usage(inbox))
    actions = inbox.add_subparsers(dest="inbox_command", metavar="ACTION")

    add = actions.add_parser("add", help="queue a message (the text, or - to read stdin)")
    add.add_argument("text", help="the message; '-' reads it from standard input")
    add.add_argument("--from", dest="sender", default="user", help="who sends it (default user)")
    add.add_argument("--priority", type=_priority, help="high, normal, low or an integer")
    add.set_defaults(handler=cmd_add)

    show = actions.add_parser("list", help="show waiting and in-progress messages")
    show.add_argument("--archive", metavar="DATE", help="show the archive of DATE (YYYY-MM-DD)")
    show.set_defaults(handler=cmd_list)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return EXIT_USAGE


def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    queue = MessageQueue.from_settings(settings)
    try:
        message = queue.append(text, sender=args.sender, channel="cli", priority=args.priority)
    except ValueError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"queued {message.id} in {queue.inbox_file.path}")
    return EXIT_OK


def _line(message: Message) -> str:
    parts = [format_timestamp(message.timestamp), message.id, f"from {message.sender}"]
    parts.append(f"via {message.channel}")
    if message.priority is not None:
        parts.append(f"priority {format_priority(message.priority)}")
    if message.outcome:
        parts.append(f"{message.outcome}" + (f" ({message.task_id})" if message.task_id else ""))
    first = message.text.split("\n", 1)[0]
    return "  " + "  ".join(parts) + f"\n    {first[:100]}"


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    queue = MessageQueue.from_settings(settings)
    if args.archive:
        try:
            day = date.fromisoformat(args.archive)
        except ValueError:
            print(f"jarvis: not a date (YYYY-MM-DD): {args.archive}", file=sys.stderr)
            return EXIT_USAGE
        sections = [(f"archive {day}", queue.archived(day))]
    else:
        sections = [("waiting", queue.pending()), ("in progress", queue.processing())]
    for title, messages in sections:
        print(f"{title}: {len(messages)}")
        for message in messages:
            print(_line(message))
    problems = queue.problems()
    if problems:
        print(f"unreadable sections (kept in the files): {len(problems)}")
        for problem in problems:
            print(f"  {problem}")
    return EXIT_OK
