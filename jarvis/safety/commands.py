"""`jarvis stop`: ask the running `jarvis serve` to cancel its task, through its API.

It reads the daemon's token from ``DATA/config/api_token`` and posts
``POST /api/stop {"by": "cli"}`` to the address in ``settings.api.http`` (default
127.0.0.1:8765) or ``--url``. Exit codes: 0 a task is being stopped, 1 no task was
running or the daemon could not be reached.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings

EXIT_OK, EXIT_FAILED = 0, 1
DEFAULT_ADDRESS = "127.0.0.1:8765"
TOKEN_FILE = Path("config") / "api_token"


def register(subparsers: argparse._SubParsersAction) -> None:
    stop = subparsers.add_parser(
        "stop", help="cancel the task `jarvis serve` is running (through its API)"
    )
    stop.add_argument("--url", help="the daemon's API, e.g. http://127.0.0.1:8765")
    stop.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for it")
    stop.set_defaults(handler=cmd_stop)


def api_url(settings: Settings, given: str | None) -> str:
    """``--url``, else ``settings.api.http`` (HOST:PORT), else 127.0.0.1:8765."""
    if given:
        return given.rstrip("/")
    api = getattr(settings, "api", None)
    spec = str(getattr(api, "http", "") or DEFAULT_ADDRESS)
    if spec == "off":
        raise ValueError("the daemon's HTTP API is off (api.http); give --url")
    host, sep, port = spec.rpartition(":")
    if not sep:
        host, port = spec, "8765"
    if spec.isdigit():
        host, port = "", spec
    host = host or "127.0.0.1"
    if host in ("0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    return f"http://{host}:{port}"


def cmd_stop(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    token_path = settings.data_dir / TOKEN_FILE
    try:
        token = token_path.read_text(encoding="utf-8").strip()
        url = api_url(settings, args.url)
    except (OSError, ValueError) as exc:
        print(f"jarvis stop: no running daemon's token ({exc}); is `jarvis serve` running?")
        return EXIT_FAILED
    try:
        response = httpx.post(
            f"{url}/api/stop",
            json={"by": "cli"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=args.timeout,
        )
    except httpx.HTTPError as exc:
        print(f"jarvis stop: cannot reach the daemon at {url}: {exc}")
        return EXIT_FAILED
    if response.status_code != 202:
        print(f"jarvis stop: the daemon answered {response.status_code}: {response.text[:200]}")
        return EXIT_FAILED
    if not response.json().get("stopping"):
        print("jarvis stop: no task is running")
        return EXIT_FAILED
    print("jarvis stop: the running task is being cancelled")
    return EXIT_OK
