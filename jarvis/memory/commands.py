"""`jarvis memory ...`: look at and look after long-term memory from the shell.

Sub-commands: ``add TEXT``, ``search QUERY``, ``list``, ``forget ID``, ``compress``,
``repair`` and ``check`` (references to stored pictures that are gone). Each handler is
``fn(args, settings) -> exit code``; ``jarvis.cli`` calls ``args.handler(args, settings)``.
Exit codes: 0 done, 1 failed or not found (``check``: a reference left dangling), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.memory.long_term import LongTermMemory, Memory

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
TYPES = ("preference", "skill", "history")  # MemoryType, spelled out so --help stays import-light

# compress() keyword -> the setting that overrides its default (CLI flags override both)

Handler = Callable[[argparse.Namespace, "Settings"], int]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``memory`` and its sub-commands to the ``jarvis`` parser."""
    memory = subparsers.add_parser(
        "memory",
        help="long-term memory: add, search, list, forget, compress, repair, check",
        description="Long-term memory: preferences, skills and task history.",
    )
    memory.set_defaults(handler=_usage(memory))
    sub = memory.add_subparsers(dest="memory_command", metavar="ACTION")

    add = sub.add_parser("add", help="remember something")
    add.add_argument("text", help="what to remember, in plain words")
    add.add_argument("--type", choices=TYPES, default="preference")
    add.add_argument("--importance", type=_importance, default=5.0, help="0..10 (default 5)")
    add.add_argument("--task-id", action="append", default=[], help="task this belongs to")
    _leaf(add, cmd_add)

    search = sub.add_parser("search", help="memories closest in meaning to a query")
    search.add_argument("query")
    search.add_argument("--top-k", type=_positive, default=5)
    search.add_argument("--type", action="append", choices=TYPES, help="repeat for several")
    search.add_argument("--json", action="store_true", help="one JSON object per line")
    _leaf(search, cmd_search)

    listing = sub.add_parser("list", help="all memories, oldest first")
    listing.add_argument("--type", action="append", choices=TYPES, help="repeat for several")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    _leaf(listing, cmd_list)

    forget = sub.add_parser("forget", help="delete one memory by id")
    forget.add_argument("id")
    _leaf(forget, cmd_forget)

    compress = sub.add_parser("compress", help="forget faded memories, merge near-duplicates")
    compress.add_argument("--dry-run", action="store_true", help="report only, change nothing")
    compress.add_argument("--threshold", type=float, help="keep while retention*importance >= this")
    compress.add_argument("--merge-cosine", type=float, help="merge same-type memories above this")
    _leaf(compress, cmd_compress)

    repair = sub.add_parser(
        "repair", help="rebuild preferences.json and skills.json from the store"
    )
    _leaf(repair, cmd_repair)

    check = sub.add_parser(
        "check",
        help="find journals, step records, runs and memories that name a missing picture",
    )
    check.add_argument(
        "--repair", action="store_true", help="re-point or restore from a copy with its pixels"
    )
    check.add_argument("--json", action="store_true", help="one JSON document")
    _leaf(check, cmd_check)


def _leaf(parser: argparse.ArgumentParser, handler: Handler) -> None:
    parser.set_defaults(handler=handler)


def _usage(parser: argparse.ArgumentParser) -> Handler:
    def show_usage(args: argparse.Namespace, settings: Settings) -> int:
        parser.print_help()
        return EXIT_USAGE

    return show_usage


def _importance(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError("importance must be between 0 and 10")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


@contextmanager
def _open(settings: Settings) -> Iterator[LongTermMemory]:
    from jarvis.memory.long_term import LongTermMemory

    with LongTermMemory.from_settings(settings) as memory:
        yield memory


def _run(action: Callable[[], int]) -> int:
    """The CLI boundary: a broken model install or store becomes a message and exit 1."""
    from jarvis.memory.embedding import EmbeddingUnavailable
    from jarvis.owner_lock import LockHeld

    try:
        return action()
    except (EmbeddingUnavailable, LockHeld) as exc:
        print(f"jarvis memory: {exc}")
        return EXIT_FAILED


def _line(memory: Memory, score: float | None = None) -> str:
    lead = f"{score:5.3f}  " if score is not None else ""
    text = " ".join(memory.content.split())
    return f"{lead}{memory.id}  {memory.type:<10}  {memory.importance:4.1f}  {text}"


def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.memory.long_term import Memory

    def action() -> int:
        with _open(settings) as memory:
            stored = memory.store(
                Memory(
                    type=args.type,
                    content=args.text,
                    importance=args.importance,
                    task_ids=list(args.task_id),
                )
            )
        print(stored.id)
        return EXIT_OK

    if not args.text.strip():
        print("jarvis memory add: the text is empty")
        return EXIT_USAGE
    return _run(action)


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    def action() -> int:
        with _open(settings) as memory:
            hits = memory.retrieve(args.query, top_k=args.top_k, types=args.type, touch=False)
        for found, score in hits:
            if args.json:
                print(json.dumps({"score": score, "memory": found.model_dump(mode="json")}))
            else:
                print(_line(found, score))
        if not hits and not args.json:
            print("no memories found")
        return EXIT_OK

    return _run(action)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    def action() -> int:
        with _open(settings) as memory:
            memories = memory.list(types=args.type)
        for found in memories:
            print(found.model_dump_json() if args.json else _line(found))
        if not args.json:
            print(f"{len(memories)} memories")
        return EXIT_OK

    return _run(action)


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    def action() -> int:
        with _open(settings) as memory:
            gone = memory.forget(args.id)
        print(f"forgot {args.id}" if gone else f"no memory with id {args.id}")
        return EXIT_OK if gone else EXIT_FAILED

    return _run(action)


def cmd_compress(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.memory.maintenance import upkeep
    from jarvis.runs.index import recent_runs

    def action() -> int:
        with _open(settings) as memory:
            result = upkeep(
                settings,
                memory,
                dry_run=args.dry_run,
                recent_runs=recent_runs(settings.data_dir),
                threshold=args.threshold,
                merge_cosine=args.merge_cosine,
            )
        report = result.memories
        verb = "would forget" if report.dry_run else "forgot"
        print(f"examined {report.examined}; {verb} {len(report.forgotten)}; merged:")
        for kept, absorbed in report.merged:
            print(f"  {absorbed} -> {kept}")
        if not report.merged:
            print("  nothing")
        for memory_id in report.forgotten:
            print(f"  {verb} {memory_id}")
        if result.screenshots is not None:
            shots = result.screenshots
            print(
                f"screenshots: {shots.files_before} stored; removed {shots.files_removed} "
                f"duplicates ({shots.bytes_freed} bytes); "
                f"re-pointed {shots.records_repointed} step records"
            )
        if result.expired is not None:
            print(
                f"expired: {result.expired['steps']} step records and "
                f"{result.expired['screenshots']} unreferenced screenshots"
            )
        return EXIT_OK

    return _run(action)


def cmd_repair(args: argparse.Namespace, settings: Settings) -> int:
    def action() -> int:
        from jarvis.memory.long_term import LongTermMemory

        with LongTermMemory.from_settings(settings, repair_on_open=False) as memory:
            problems = memory.check()
            report = memory.repair()
        for problem in problems:
            print(f"found: {problem}")
        print(
            f"{report.memories} memories; rewrote {_names(report.mirrors_rewritten)}; "
            f"created {_names(report.mirrors_created)}; "
            f"removed {_names(report.temp_files_removed)}"
        )
        return EXIT_OK

    return _run(action)


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0 when every reference resolves (after ``--repair``: when none is left)."""
    from jarvis.memory.screenshot_check import check

    data_dir = settings.data_dir
    report = check(data_dir, repair=args.repair, max_distance=settings.screenshot_dedup_distance)
    if args.json:
        print(json.dumps(report.to_json(data_dir)))
    else:
        for problem in report.problems:
            print(problem.line(data_dir))
        print(report.summary())
    return EXIT_FAILED if report.left else EXIT_OK


def _names(names: list[str]) -> str:
    return ", ".join(names) or "nothing"
