"""`jarvis report TASK_ID` and `jarvis replay TASK_ID`.

Each handler is ``fn(args, settings) -> exit code``. Exit codes: 0 done, 1 failed (no
such run; a replay that stopped), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.config import PROVIDERS

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.runs.replay import ReplayOutcome

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


def register(subparsers: argparse._SubParsersAction) -> None:
    report = subparsers.add_parser(
        "report", help="write a run's report.html (one self-contained file)"
    )
    report.add_argument("task_id", help="the task id (its latest run), or a run folder")
    report.add_argument("--out", type=Path, help="where to write it (default: the run folder)")
    report.add_argument("--open", action="store_true", help="open it in the web browser")
    report.set_defaults(handler=cmd_report)

    replay = subparsers.add_parser(
        "replay", help="repeat a finished task's actions without the model, guarded at each step"
    )
    replay.add_argument("task_id", nargs="?", help="the task id (its latest run), or a run folder")
    replay.add_argument("--recording", help="repeat a recording of `jarvis record` instead")
    replay.add_argument("--secret", help="the stored secret to type where the recording typed one")
    replay.add_argument(
        "--model",
        dest="use_model",
        action="store_true",
        help="let the model find a target the recording cannot be matched to",
    )
    replay.add_argument("--provider", choices=PROVIDERS)
    replay.add_argument("--report", action="store_true", help="write the replay's report.html")
    replay.add_argument(
        "--yes", action="store_true", help="repeat calls that need approval without asking"
    )
    replay.add_argument("--max-cost-usd", type=float, help="end the replay's model calls here")
    replay.add_argument("--max-tokens-budget", type=int, help="end them at this many tokens")
    replay.set_defaults(handler=cmd_replay)


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.runs.report import RunNotFound, locate, write_report

    try:
        folder = locate(settings.data_dir, args.task_id)
    except RunNotFound as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED
    path = write_report(folder, settings.data_dir, args.out)
    print(path)
    if args.open and not webbrowser.open(path.resolve().as_uri()):
        print(f"jarvis: no web browser found to open it; open {path} yourself", file=sys.stderr)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from jarvis.desktop.x11 import XDisplay
    from jarvis.events import EventBus
    from jarvis.llm.base import ProviderError
    from jarvis.runs.replay_run import replay_task
    from jarvis.runs.report import RunNotFound
    from jarvis.safety.approvals import ApprovalGate, ApprovalStore

    if (args.task_id is None) == (args.recording is None):
        print("jarvis replay: name a task id or --recording NAME (one of them)", file=sys.stderr)
        return EXIT_USAGE
    if args.recording is not None:
        from jarvis.recording.replay_steps import recording_run_folder

        try:
            args.task_id = str(recording_run_folder(settings, args.recording, args.secret))
        except (FileNotFoundError, ValueError) as exc:
            print(f"jarvis replay: {exc}", file=sys.stderr)
            return EXIT_USAGE

    async def replay() -> ReplayOutcome:
        bus = EventBus()  # the gate `jarvis run` has: nobody to answer, so held is refused
        gate = ApprovalGate(
            settings.safety, ApprovalStore(bus), unattended=args.yes, channels=settings.channels
        )
        return await replay_task(
            settings,
            args.task_id,
            use_model=args.use_model,
            bus=bus,
            approvals=gate,
            signals=True,
            where=XDisplay.from_env(),  # read once here, at the command's start
        )

    try:
        outcome = asyncio.run(replay())
    except (RunNotFound, ProviderError) as exc:  # no such run; --model without a usable key
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(outcome.describe())
    if args.report:
        from jarvis.runs.report import write_report

        print(write_report(outcome.folder, settings.data_dir))
    if outcome.cancelled_by is not None:
        return EXIT_CANCELLED
    return EXIT_OK if outcome.stopped is None else EXIT_FAILED
