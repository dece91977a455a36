"""`jarvis secrets add|list|remove`: the secrets the agent may type by name.

``add NAME`` reads the value without echo from the terminal, or from stdin when it is not
a terminal (``printf %s "$PW" | jarvis secrets add NAME``); ``--totp`` stores a TOTP seed
(base32) for ``type_totp``. ``list`` shows names, descriptions and ``only_in`` patterns,
never a value. Exit codes: 0 done, 1 not found, 2 bad input or a store that cannot be used.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.secrets.store import SecretStore

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    secrets = subparsers.add_parser("secrets", help="secrets the agent types by name")
    actions = secrets.add_subparsers(dest="secrets_command", required=True)
    add = actions.add_parser("add", help="store a secret (the value is read without echo)")
    add.add_argument("name", help="letters, digits, '.', '_' and '-'")
    add.add_argument("--description", default="", help="what the model is told it is")
    add.add_argument(
        "--only-in",
        action="append",
        default=[],
        metavar="PATTERN",
        help="window titles it may be typed into, e.g. '*github.com*' (repeatable)",
    )
    add.add_argument("--totp", action="store_true", help="the value is a TOTP seed (base32)")
    add.set_defaults(handler=cmd_add)
    listing = actions.add_parser("list", help="names and descriptions (never values)")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    listing.set_defaults(handler=cmd_list)
    remove = actions.add_parser("remove", help="forget a secret")
    remove.add_argument("name")
    remove.set_defaults(handler=cmd_remove)


def _store(settings: Settings) -> SecretStore:
    from jarvis.secrets.store import SecretStore

    def ask() -> str:
        if not sys.stdin.isatty():
            return ""
        return getpass.getpass("passphrase of the secrets file: ")

    return SecretStore(settings.data_dir, settings.safety.secrets, ask=ask)


def read_value(name: str) -> str:
    """The value from the terminal without echo, else all of stdin (one trailing newline
    dropped)."""
    if sys.stdin.isatty():
        return getpass.getpass(f"value of {name}: ")
    text = sys.stdin.read()
    return text[:-1] if text.endswith("\n") else text


def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    from pydantic import ValidationError

    from jarvis.secrets.store import SecretInfo, SecretsError

    try:
        info = SecretInfo(
            name=args.name,
            description=args.description,
            only_in=args.only_in,
            kind="totp" if args.totp else "password",
        )
    except ValidationError:
        print(f"jarvis secrets: bad name {args.name!r}: use letters, digits, '.', '_' and '-'")
        return EXIT_USAGE
    try:
        stored = _store(settings).add(info, read_value(args.name))
    except (SecretsError, ValueError) as exc:
        print(f"jarvis secrets: {exc}")
        return EXIT_USAGE
    print(f"jarvis secrets: {stored.name} stored in the {stored.store}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.secrets.store import SecretsError

    try:
        entries = _store(settings).entries()
    except SecretsError as exc:
        print(f"jarvis secrets: {exc}")
        return EXIT_USAGE
    if args.json:
        print(json.dumps({"secrets": [e.model_dump() for e in entries]}))
        return EXIT_OK
    if not entries:
        print("no secrets (add one with `jarvis secrets add NAME`)")
    for entry in entries:
        where = f"  only in {', '.join(entry.only_in)}" if entry.only_in else ""
        print(f"{entry.line()}  [{entry.store}]{where}")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.secrets.store import SecretsError

    try:
        removed = _store(settings).remove(args.name)
    except SecretsError as exc:
        print(f"jarvis secrets: {exc}")
        return EXIT_USAGE
    if not removed:
        print(f"jarvis secrets: no secret named {args.name!r}")
        return EXIT_NOT_FOUND
    print(f"jarvis secrets: {args.name} removed")
    return EXIT_OK
