"""`jarvis profiles list|show|test`: the model profiles in use (shipped plus the
``model_profiles`` setting), and what a sample answer means on a given screen.

``test`` reads a raw model answer the way a run does (the profile's grammar, Qwen's
``computer_use`` call, or a tool call's arguments), then maps every point through the
profile's image rule and coordinate space to a screen pixel. Exit 0 when every action
parsed, 1 when one did not (its error is printed, as the model would see it), 2 for bad
input.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from jarvis.geometry import Size, model_to_screen
from jarvis.llm.placer import Placer
from jarvis.llm.profiles import qwen_tool
from jarvis.llm.profiles.catalog import Profile, profile_by_name
from jarvis.llm.profiles.grammars import TEXT_GRAMMARS
from jarvis.llm.profiles.select import geometry, profiles_of
from jarvis.llm.profiles.settings import UnknownProfile, shipped_entries
from jarvis.llm.text_mode import parse_tool_calls
from jarvis.llm.types import ToolCall

if TYPE_CHECKING:
    from jarvis.config import Settings

EXIT_OK, EXIT_UNPARSED, EXIT_USAGE = 0, 1, 2
POINT_PAIRS = (("x", "y"), ("startX", "startY"), ("endX", "endY"))
POINT_NAMES = {"x": "point", "startX": "start", "endX": "end"}


def register(subparsers: argparse._SubParsersAction) -> None:
    top = subparsers.add_parser("profiles", help="list, show and test the model profiles")
    sub = top.add_subparsers(dest="profiles_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="every profile, in matching order")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=cmd_list)
    show = sub.add_parser("show", help="one profile with every field")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_show)
    test = sub.add_parser("test", help="parse a raw model answer; print actions and points")
    test.add_argument("name")
    test.add_argument("answer", help="the model's raw answer (text or tool-call arguments)")
    test.add_argument("--screen", type=Size.parse, default=Size(1920, 1080), help="WxH")
    test.add_argument("--json", action="store_true")
    test.set_defaults(handler=cmd_test)
    for parser in (ls, show, test):
        parser.add_argument("--data-dir", default=argparse.SUPPRESS, help="data directory")


def describe_image(profile: Profile) -> str:
    rule = profile.image
    if rule.kind == "smart":
        return f"smart_resize factor {rule.factor}, {rule.min_pixels}..{rule.max_pixels} px"
    if rule.kind == "anthropic":
        return "Anthropic's sizes (with the computer tool), else fit to max_side"
    return f"fit to a longest side of {rule.max_side or 'max_side'}"


def summary(profile: Profile, origin: str) -> dict[str, Any]:
    return {
        "name": profile.name,
        "title": profile.title,
        "api": profile.api,
        "action_format": profile.action_format,
        "coordinates": profile.coordinates,
        "image": describe_image(profile),
        "tree": profile.tree,
        "patterns": list(profile.patterns),
        "from": origin,
        "source": profile.source,
    }


def _origins(settings: Settings) -> dict[str, str]:
    shipped = {e["name"] for e in shipped_entries()}
    out = {}
    for name in profiles_of(settings):
        user = name in settings.model_profiles
        out[name] = (
            ("settings" if name not in shipped else "shipped + settings") if user else ("shipped")
        )
    return out


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    origins = _origins(settings)
    rows = [summary(p, origins[n]) for n, p in profiles_of(settings).items()]
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK
    for r in rows:
        print(
            f"{r['name']:<16} {r['api']:<17} {r['action_format']:<18} {r['coordinates']:<15} "
            f"{r['image']}  [{r['from']}]"
        )
        if r["source"]:
            print(f"    source: {r['source']}")
    return EXIT_OK


def _profile(name: str, settings: Settings, command: str) -> Profile | None:
    try:
        return profile_by_name(name, profiles_of(settings))
    except UnknownProfile as exc:
        print(f"jarvis profiles {command}: {exc}")
        return None


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    profile = _profile(args.name, settings, "show")
    if profile is None:
        return EXIT_USAGE
    data = {**profile.spec, "from": _origins(settings)[profile.name]}
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    for key, value in data.items():
        print(f"{key:<18} {json.dumps(value) if isinstance(value, dict | list) else value}")
    return EXIT_OK


def _arguments(answer: str) -> dict[str, Any] | None:
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_answer(profile: Profile, answer: str, screen: Size, settings: Settings) -> list[ToolCall]:
    """Tool calls on the profile's grid for a raw answer, as a run parses it."""
    grid, image = geometry(profile, screen, settings)
    point = Placer(profile.space, image)  # the edge rule's notes go on the calls
    return point.annotate(_parsed(profile, answer, grid, point))


def _parsed(profile: Profile, answer: str, grid: Size, point: Placer) -> list[ToolCall]:
    fmt = profile.action_format
    if fmt in TEXT_GRAMMARS:
        return TEXT_GRAMMARS[fmt](answer, point)
    _, calls = parse_tool_calls(answer, [qwen_tool.NAME, "click"])
    args = _arguments(answer)
    if not calls and args is not None:
        name = qwen_tool.NAME if fmt == "qwen-computer-use" else str(args.pop("name", "click"))
        calls = [ToolCall(id="answer", name=name, arguments=args.get("arguments", args))]
    if fmt == "qwen-computer-use":
        return qwen_tool.calls_from(calls, point, grid)
    out = []
    for call in calls:  # Jarvis's tools and the vendors' tools: pixels of the image sent
        arguments = dict(call.arguments)
        try:
            if "coordinate" in arguments:
                arguments["x"], arguments["y"] = arguments.pop("coordinate")[:2]
            for kx, ky in POINT_PAIRS:
                if kx in arguments:
                    arguments[kx], arguments[ky] = point([arguments[kx], arguments[ky]])
        except (ValueError, TypeError, KeyError) as exc:
            out.append(ToolCall(id=call.id, name=call.name, parse_error=str(exc)))
            continue
        out.append(call.model_copy(update={"arguments": arguments}))
    return out


def screen_points(profile: Profile, call: ToolCall, screen: Size, settings: Settings) -> dict:
    grid, _ = geometry(profile, screen, settings)
    points = {}
    for kx, ky in POINT_PAIRS:
        if kx in call.arguments:
            gx, gy = int(call.arguments[kx]), int(call.arguments[ky])
            points[POINT_NAMES[kx]] = list(model_to_screen(gx, gy, grid, screen))
    return points


def cmd_test(args: argparse.Namespace, settings: Settings) -> int:
    profile = _profile(args.name, settings, "test")
    if profile is None:
        return EXIT_USAGE
    screen: Size = args.screen
    _, image = geometry(profile, screen, settings)
    calls = parse_answer(profile, args.answer, screen, settings)
    actions: list[dict[str, Any]] = []
    for call in calls:
        if call.parse_error:
            actions.append({"tool": call.name, "error": call.parse_error})
        else:
            points = screen_points(profile, call, screen, settings)
            actions.append({"tool": call.name, "arguments": call.arguments, "screen": points})
            if call.note:
                actions[-1]["note"] = call.note
    if args.json:
        print(
            json.dumps(
                {
                    "profile": profile.name,
                    "screen": str(screen),
                    "image": str(image),
                    "actions": actions,
                }
            )
        )
    else:
        print(
            f"profile {profile.name}: screen {screen}, image sent {image}, "
            f"{profile.space.describe()}"
        )
        if not actions:
            print("no action in the answer")
        for a in actions:
            if "error" in a:
                print(f"  {a['tool']}: ERROR {a['error']}")
            else:
                where = ", ".join(f"{k} {tuple(v)}" for k, v in a["screen"].items())
                print(f"  {a['tool']} {json.dumps(a['arguments'])} -> screen {where or '-'}")
                if "note" in a:
                    print(f"    note: {a['note']}")
    ok = actions and not any("error" in a for a in actions)
    return EXIT_OK if ok else EXIT_UNPARSED
