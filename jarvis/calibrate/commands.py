"""`jarvis calibrate`: show the model one picture with known targets and say which
coordinate convention its answers fit (:mod:`jarvis.calibrate.calibrate`).

Exit codes: 0 the answers fit the profile in use, 1 they fit another convention or none
(the output says which profile would fit), 2 the model could not be asked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from typing import TYPE_CHECKING

from jarvis.config import PROVIDERS
from jarvis.geometry import Size

if TYPE_CHECKING:
    from jarvis.calibrate.calibrate import Report
    from jarvis.config import Settings

log = logging.getLogger(__name__)
EXIT_FITS, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2
FALLBACK_SCREEN = Size(1920, 1080)


def register(subparsers: argparse._SubParsersAction) -> None:
    cal = subparsers.add_parser(
        "calibrate",
        help="ask the model to click known targets; report which coordinate convention fits",
    )
    cal.add_argument("--provider", choices=PROVIDERS)
    cal.add_argument("--model", help="model name for the chosen provider")
    cal.add_argument("--profile", help="model profile to try (default: model_profile, or chosen)")
    cal.add_argument(
        "--screen", type=Size.parse, help="screen size WxH (default: this display's, or 1920x1080)"
    )
    cal.add_argument("--json", action="store_true", help="print the report as one JSON object")
    cal.add_argument(
        "--serving",
        action="store_true",
        help="check the OpenAI-compatible server you run: one screenshot, one target, one "
        "line saying whether the answer parsed and landed and which server quirk it met",
    )
    cal.set_defaults(handler=cmd_calibrate)


def screen_size(given: Size | None, settings: Settings) -> Size:
    if given is not None:
        return given
    try:
        from jarvis.desktop.desktop import Desktop
        from jarvis.desktop.x11 import XDisplay

        # the same desktop the agent gets, on the display the command was started on
        with Desktop.open(settings, XDisplay.from_env()) as desktop:
            return desktop.screen.size
    except Exception as exc:  # no display: the picture is synthetic, any size will do
        log.info("calibrate: no display (%s); using %s", exc, FALLBACK_SCREEN)
        return FALLBACK_SCREEN


def cmd_calibrate(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.calibrate.calibrate import calibrate
    from jarvis.llm.base import ProviderError
    from jarvis.llm.factory import make_provider
    from jarvis.llm.profiles.catalog import profile_by_name
    from jarvis.llm.profiles.select import profiles_of
    from jarvis.llm.profiles.settings import UnknownProfile
    from jarvis.preflight import base_url_problem
    from jarvis.tools.computer import build_registry

    problem = base_url_problem(settings.provider)
    if problem is not None:  # the model cannot be reached: said at once, not after retries
        print(f"jarvis calibrate: {problem}")
        return EXIT_ERROR
    if args.profile:
        try:
            profile_by_name(args.profile, profiles_of(settings))
        except UnknownProfile as exc:
            print(f"jarvis calibrate: {exc}")
            return EXIT_ERROR
        settings = settings.model_copy(update={"model_profile": args.profile})
    if args.serving:
        return cmd_serving(settings, as_json=args.json)
    screen = screen_size(args.screen, settings)
    tools = build_registry(settings).specs(settings.provider)

    async def ask() -> Report:
        provider = make_provider(settings)
        try:
            return await calibrate(settings, provider, tools, screen)
        finally:
            await provider.aclose()

    try:
        report = asyncio.run(ask())
    except ProviderError as exc:
        print(f"jarvis calibrate: the model could not be asked: {exc}")
        return EXIT_ERROR
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print("\n".join(report.lines()))
    return EXIT_FITS if report.fits else EXIT_MISMATCH


def cmd_serving(settings: Settings, as_json: bool = False) -> int:
    """`jarvis calibrate --serving`: one line (``--json``: one JSON object); exit 0 landed,
    1 missed or not parsed, 2 the server did not answer."""
    from jarvis.calibrate.serving import EXIT_UNANSWERED, Outcome, check_serving
    from jarvis.events import EventBus
    from jarvis.llm.base import ProviderError
    from jarvis.llm.factory import make_provider
    from jarvis.tools.computer import build_registry

    tools = build_registry(settings).specs(settings.provider)

    async def ask() -> Outcome:
        bus = EventBus()
        provider = make_provider(settings, bus)
        try:
            return await check_serving(settings, provider, bus, tools)
        finally:
            await provider.aclose()

    try:
        outcome = asyncio.run(ask())
    except (ProviderError, ValueError) as exc:
        print(f"jarvis calibrate --serving: {exc}")
        return EXIT_UNANSWERED
    print(json.dumps(outcome.to_json()) if as_json else outcome.line())
    return outcome.exit_code
