"""`web_fetch(url)`: one web page as readable text, without reaching private networks.

Each hop (the URL, then every redirect, followed by hand) is checked before anything is
sent: http or https only, no credentials in the URL, the host on the channel's allowlist
when the task's channel has one (email: none by default), and every address the host
resolves to public (or on ``toolbox.web.allow_private``). The connection then goes to the
address that was checked: a network backend pinned to it replaces the second lookup an
attacker's DNS could answer differently, while the URL, the ``Host`` header, SNI and the
certificate check keep the host name. Bodies stop at ``max_bytes`` (no compression is
accepted, so no bomb), the whole fetch at ``timeout_s``. HTML becomes text with
trafilatura, cut at ``max_chars``.

This module registers the tool; the fetching (:mod:`jarvis.tools.web_fetcher`, with httpx and
trafilatura) loads at the first call, so a run that never fetches a page never loads them.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from jarvis.tools.context import ToolContext
from jarvis.tools.policy import Policy
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import TIMEOUT, ToolFailure
from jarvis.tools.toolbox_settings import WebSettings

if TYPE_CHECKING:
    from jarvis.tools.web_fetcher import Fetcher

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Host name and port to the IP addresses it resolves to (injectable for tests)."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives (getaddrinfo), in its order, deduplicated."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class WebFetchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048, description="an http:// or https:// URL")


def register_web_tools(
    registry: ToolRegistry, settings: WebSettings, resolver: Resolver = system_resolver
) -> None:
    """Add web_fetch (its own timeout inside; the registry's bound a little above it). Its
    fetcher is made at the first call (httpx and trafilatura load then)."""
    made: list[Fetcher] = []

    async def web_fetch(args: WebFetchArgs, ctx: ToolContext) -> dict[str, Any]:
        """Fetch a public web page (http/https) and return its title and readable text."""
        if not made:
            from jarvis.tools.web_fetcher import Fetcher

            made.append(Fetcher(settings, resolver))
        hosts = Policy.for_settings(ctx.settings).web_hosts(ctx.channels)
        try:
            async with asyncio.timeout(settings.timeout_s):
                return await made[0].fetch(args.url, hosts, ", ".join(ctx.channels))
        except TimeoutError:
            raise ToolFailure(
                TIMEOUT, f"fetching {args.url} took longer than {settings.timeout_s:g}s"
            ) from None

    registry.register("web_fetch", web_fetch, WebFetchArgs, timeout_s=settings.timeout_s + 5)
