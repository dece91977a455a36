"""The `jarvis` command."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from importlib import import_module
from typing import TYPE_CHECKING

from jarvis import __version__, gc_pause
from jarvis.config import PROVIDERS, ConfigError, Settings, load_chosen
from jarvis.logfile import setup_logging

if TYPE_CHECKING:
    from jarvis.agent.agent import Agent
    from jarvis.desktop.backend import Where
    from jarvis.desktop.x11 import XDisplay
    from jarvis.safety.killswitch import EarlyBrake

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NEEDS_USER, EXIT_CANCELLED = 0, 1, 2, 3, 130
STATUS_EXIT = {
    "finished": EXIT_OK,
    "failed": EXIT_FAILED,
    "needs_user": EXIT_NEEDS_USER,
    "cancelled": EXIT_CANCELLED,
}

# Modules that add their own sub-commands with ``register(subparsers)``.
SUBCOMMAND_MODULES = (
    "jarvis.memory.commands",
    "jarvis.gateway.commands",
    "jarvis.gateway.serve_command",
    "jarvis.tools.commands",
    "jarvis.safety.commands",
    "jarvis.api.login_command",
    "jarvis.runs.commands",
    "jarvis.runs.report_commands",
    "jarvis.eval.commands",
    "jarvis.gateway.channels.email.commands",
    "jarvis.tui.commands",
    "jarvis.calibrate.commands",
    "jarvis.calibrate.profiles_commands",
    "jarvis.fleet.commands",
    "jarvis.secrets.commands",
    "jarvis.recording.commands",
    "jarvis.gateway.schedule_commands",
)


OWN_COMMANDS = ("run", "doctor")
"""The commands this module defines: for these the other commands' modules are not imported."""
SANDBOX_KINDS = ("x11", "wayland")
DATA_DIR_HELP = "data directory (default: $JARVIS_DATA_DIR or ./data)"


def _common(p: argparse.ArgumentParser, top: bool = False) -> None:
    """``--data-dir`` and ``-v``. Below the top level their default is SUPPRESS: argparse
    copies a sub-command's defaults over what was parsed before it, so ``jarvis --data-dir D
    run`` would lose D otherwise."""
    have = {a.dest: a for a in p._actions}
    if "data_dir" not in have:
        p.add_argument("--data-dir", default=None if top else argparse.SUPPRESS, help=DATA_DIR_HELP)
    if "verbose" not in have:
        p.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=False if top else argparse.SUPPRESS,
            help="debug logging to stderr",
        )
    if not top:
        for action in p._actions:
            if action.dest in ("data_dir", "verbose"):
                action.default = argparse.SUPPRESS


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [
        child
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for child in dict.fromkeys(action.choices.values())
    ]


def _everywhere(parser: argparse.ArgumentParser) -> None:
    """Every command at every depth takes ``--data-dir`` and ``-v`` before or after itself
    (the same way: SUPPRESS defaults), and names itself for its own usage message."""
    for child in _subparsers(parser):
        _common(child)
        child.set_defaults(usage_parser=child)
        _everywhere(child)


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names when only ``--data-dir`` and ``-v`` come before it (None
    when something else does, ``--help`` for one, or no command is named)."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--data-dir":
            next(tokens, None)
        elif token not in ("-v", "--verbose") and not token.startswith("--data-dir="):
            return None if token.startswith("-") else token
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `jarvis` parser. For a command line ``argv`` that names `run` or `doctor`, the
    other commands' modules are left unimported: their imports cost a `jarvis run` time
    before its kill switch is grabbed."""
    parser = argparse.ArgumentParser(
        prog="jarvis",
        description="Jarvis, a desktop computer-use agent. It moves your real mouse and keyboard.",
    )
    parser.add_argument("--version", action="version", version=f"jarvis {__version__}")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run one task in the foreground with live progress")
    run.add_argument("task", help="what Jarvis should do, in plain words")
    run.add_argument("--provider", choices=PROVIDERS)
    run.add_argument("--model", help="model name for the chosen provider")
    run.add_argument("--max-steps", type=int, help="step bound for this task")
    run.add_argument("--tool-mode", choices=["native", "text", "auto"])
    run.add_argument(
        "--monitor",
        type=int,
        help="the monitor this task sees and acts on: 1 the first, 2 the second, 0 all together",
    )
    run.add_argument(
        "--sandbox",
        nargs="?",
        const="x11",
        choices=SANDBOX_KINDS,
        help="run on a private virtual display (safety.sandbox): x11 (the default, Xvfb) or "
        "wayland (a headless sway); your desktop is not touched",
    )
    run.add_argument(
        "--yes", action="store_true", help="run calls that need approval without asking"
    )
    run.add_argument("--max-cost-usd", type=_positive_float, help="end the task at this cost")
    run.add_argument(
        "--max-tokens-budget", type=_positive_int, help="end the task at this many tokens"
    )
    run.set_defaults(handler=cmd_run)

    doctor = sub.add_parser("doctor", help="check display, input, model key and data dir")
    doctor.add_argument("--provider", choices=PROVIDERS)
    doctor.set_defaults(handler=cmd_doctor)

    lean = argv is not None and named_command(argv) in OWN_COMMANDS
    for name in () if lean else SUBCOMMAND_MODULES:
        module = import_module(name)
        register: Callable[[argparse._SubParsersAction], None] = module.register
        register(sub)
    _everywhere(parser)
    return parser


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _with_budget(settings: Settings, args: argparse.Namespace) -> Settings:
    """The run flags' budget over ``settings.safety``'s."""
    budget = {
        "max_cost_usd": getattr(args, "max_cost_usd", None),
        "max_tokens_total": getattr(args, "max_tokens_budget", None),
    }
    budget = {k: v for k, v in budget.items() if v is not None}
    if not budget:
        return settings
    safety = settings.safety.model_copy(update=budget)
    return settings.model_copy(update={"safety": safety})


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings a command runs with: the sources, then its flags (``--provider`` and
    ``--model`` by :func:`jarvis.config.model_overrides`, as every command takes them)."""
    settings = load_chosen(
        args.data_dir,
        getattr(args, "provider", None),
        getattr(args, "model", None),
        max_steps=getattr(args, "max_steps", None),
        tool_mode=getattr(args, "tool_mode", None),
        monitor=getattr(args, "monitor", None),
    )
    return _with_budget(settings, args)


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.doctor import run_checks

    checks = run_checks(settings)
    for check in checks:
        mark = "PASS" if check.ok else "FAIL"
        print(f"{mark}  {check.name:<9} {check.detail}")
    return EXIT_OK if all(c.ok for c in checks) else EXIT_FAILED


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    import os

    from jarvis.desktop.backend import BackendError, task_display
    from jarvis.desktop.x11 import XDisplay

    person = XDisplay.from_env()  # read once here; the agent's Desktop is made for a display
    kind = args.sandbox or ("x11" if settings.safety.sandbox.enabled else None)
    if kind is None:
        try:
            where = task_display(settings.desktop.backend, os.environ, person)
        except BackendError as exc:
            print(f"jarvis: {exc}", file=sys.stderr)
            return EXIT_FAILED
        return _run_here(args, settings, where, person)
    from jarvis.preflight import sandbox_problem

    if (problem := sandbox_problem(settings, person)) is not None:
        print(problem)
        return EXIT_FAILED
    if kind == "wayland":  # a private headless sway, run as an unprivileged user
        from jarvis.safety.wayland_sandbox import sandboxed_wayland

        return sandboxed_wayland(settings, lambda box: _run_here(args, settings, box, person))
    from jarvis.safety.sandbox import sandboxed

    return sandboxed(settings, lambda box: _run_here(args, settings, box, person))


def _run_here(args: argparse.Namespace, settings: Settings, where: Where, person: XDisplay) -> int:
    """The task on the display ``where``; the kill switch on the person's display."""
    from jarvis.owner_lock import LockHeld
    from jarvis.preflight import cannot_start

    problem = cannot_start(settings, where, presets=False)  # the presets: once braked
    if problem is not None:
        print(problem)
        return EXIT_FAILED
    try:
        return asyncio.run(_run_task(args.task, settings, args.yes, where, person))
    except LockHeld as exc:  # memory in use elsewhere (a missing model only turns it off)
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED


async def _run_task(
    task: str,
    settings: Settings,
    yes: bool,
    where: Where,
    person: XDisplay,
) -> int:
    """The brake first: the hotkey is grabbed before the agent's heavy parts load, and a
    press meanwhile cancels the run before its first action (:class:`EarlyBrake`). Then
    the model's SDK loads in a thread while the agent is built, and the presets file is
    checked (it loads the tools)."""
    from jarvis.desktop.backend import keys_display
    from jarvis.safety.killswitch import EarlyBrake, kill_switch

    loop = asyncio.get_running_loop()
    brake = EarlyBrake()
    typing_on = keys_display(where, person)  # where held X keys are let go of
    with kill_switch(settings, brake, loop, person, lambda: typing_on) as armed:
        if armed:
            print(f"brake armed: {settings.safety.kill_hotkey} stops the run", flush=True)
        from jarvis.llm.factory import preload_sdk
        from jarvis.preflight import presets_refusal

        preload_sdk(settings)
        if (problem := presets_refusal(settings)) is not None:
            print(problem)
            return EXIT_FAILED
        return await _run_braked(task, settings, yes, where, brake)


async def _run_braked(
    task: str, settings: Settings, yes: bool, where: Where, brake: EarlyBrake
) -> int:
    from jarvis.agent.factory import build_agent
    from jarvis.console import ConsoleReporter
    from jarvis.discovery import STOP_SIGNAL, foreground
    from jarvis.events import EventBus
    from jarvis.runs.journal import JournalWriter
    from jarvis.safety.approvals import ApprovalGate, ApprovalStore

    bus = EventBus()
    approvals = ApprovalGate(
        settings.safety, ApprovalStore(bus), unattended=yes, channels=settings.channels
    )
    reporter = ConsoleReporter(bus, settings)
    journal = JournalWriter.for_settings(settings, bus, channel="cli")
    try:
        async with build_agent(settings, bus, approvals=approvals, where=where) as agent:
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGINT, agent.cancel, "ctrl+c")
            loop.add_signal_handler(signal.SIGTERM, agent.cancel, "signal")
            loop.add_signal_handler(STOP_SIGNAL, agent.cancel, "cli")  # `jarvis stop`
            brake.hand_to(agent)  # a press while it loaded: cancelled before a step
            gc_pause.resume()  # the collector, past start-up's objects
            try:
                with (
                    foreground(settings.data_dir, f"run: {task}"),
                    sign(agent),  # the on-screen sign (desktop.indicator)
                ):
                    outcome = await agent.run(task)
            finally:
                loop.remove_signal_handler(signal.SIGINT)
                loop.remove_signal_handler(signal.SIGTERM)
                loop.remove_signal_handler(STOP_SIGNAL)
    finally:
        journal.close()
    reporter.final(outcome)
    return STATUS_EXIT[outcome.status]


def sign(agent: Agent) -> AbstractContextManager[None]:
    """The agent's desktop shows that Jarvis acts while a task runs (desktop.indicator)."""
    return agent.desktop.acting() if agent.desktop is not None else nullcontext()


def entry() -> None:
    """The ``jarvis`` command: :func:`main`, then an exit that skips the interpreter's last
    garbage collection over every object the command imported (chromadb, the SDKs, ...).
    That collection took 5 to 10 s on a busy 2-core machine: a stopped `jarvis serve` had
    said goodbye and still held its port and the container's stop for that long. Nothing
    is lost: the commands close their files and stores themselves, and atexit still runs.
    The collector is off while the command starts (:mod:`jarvis.gc_pause`)."""
    gc_pause.pause()
    try:
        code = main()
    except BrokenPipeError:  # `jarvis runs | head`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_OK
    finally:
        gc.freeze()
    raise SystemExit(code)


def bare_sandbox(argv: Sequence[str]) -> list[str]:
    """``--sandbox`` with no kind after it means x11, also when the task follows it
    (``jarvis run --sandbox "open the notes"``: argparse would read the task as the kind)."""
    out = list(argv)
    for i, token in enumerate(out):
        if token == "--":
            break
        kinded = any(t in ("run", "eval", "serve", "worker") for t in out[:i])
        if (
            token == "--sandbox"
            and kinded
            and (i + 1 == len(out) or out[i + 1] not in SANDBOX_KINDS)
        ):
            out[i] = "--sandbox=x11"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    given = bare_sandbox(sys.argv[1:] if argv is None else argv)
    parser = build_parser(given)
    args, extra = parser.parse_known_args(given)
    if extra:  # said by the command they were given to, with its usage, not the top level's
        usage: argparse.ArgumentParser = getattr(args, "usage_parser", parser)
        usage.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = settings_from(args)
    except ConfigError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    setup_logging(settings.data_dir if args.command != "doctor" else None, args.verbose)
    logging.getLogger(__name__).info("jarvis %s %s", __version__, args.command)
    if args.command != "run":  # run: once its agent is built (_run_braked)
        gc_pause.resume()
    handler: Callable[[argparse.Namespace, Settings], int] = args.handler
    return handler(args, settings)
