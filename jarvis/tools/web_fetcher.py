"""The network half of `web_fetch` (:mod:`jarvis.tools.web`): each hop checked, the connection
pinned to the checked address, the body capped and read as text. Its libraries (httpx,
trafilatura) load with this module, at a task's first `web_fetch`, not when a run starts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from jarvis.tools.results import INTERNAL, INVALID_PARAMS, NOT_ALLOWED, ToolFailure
from jarvis.tools.toolbox_settings import WebSettings
from jarvis.tools.web import Resolver, system_resolver
from jarvis.tools.web_guard import (
    address_refusal,
    connect_address,
    host_in,
    parse_allowlist,
    parse_ip,
)
from jarvis.tools.web_text import page_text

TEXT_TYPES = ("text/", "application/xhtml", "application/xml", "application/json")


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects a checked host name to the one address that was checked, nothing else."""

    def __init__(self, host: str, address: str) -> None:
        self._host, self._address = _norm(host), address
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if _norm(host) != self._host:
            raise httpcore.ConnectError(f"refusing to connect to unchecked host {host!r}")
        return await self._inner.connect_tcp(
            self._address, port, timeout, local_address, socket_options
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable from web_fetch")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _norm(host: str) -> str:
    return host.strip("[]").lower().rstrip(".")


def _pinned_transport(host: str, address: str) -> httpx.AsyncHTTPTransport:
    transport = httpx.AsyncHTTPTransport(trust_env=False, retries=0)
    ssl_context = httpx.create_ssl_context(trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(  # the one seam httpx has for a backend
        ssl_context=ssl_context, network_backend=_PinnedBackend(host, address), max_connections=1
    )
    return transport


class Fetcher:
    """Fetches one URL under the web settings and the task's channel policy."""

    def __init__(self, settings: WebSettings, resolver: Resolver = system_resolver) -> None:
        self.settings = settings
        self.resolver = resolver
        self.networks, self.names = parse_allowlist(settings.allow_private)

    async def check(self, url: httpx.URL, hosts: list[str] | None, channel: str) -> str:
        """The address to connect to for ``url``, or ToolFailure(-32006) saying why not."""
        if url.scheme not in ("http", "https"):
            raise ToolFailure(NOT_ALLOWED, f"only http and https URLs are fetched, not '{url}'")
        if not url.host:
            raise ToolFailure(INVALID_PARAMS, f"'{url}' has no host")
        if url.userinfo:
            raise ToolFailure(NOT_ALLOWED, "URLs with a user name or password are not fetched")
        host = url.host.lower().rstrip(".")
        if hosts is not None and not host_in(host, hosts):
            allowed = ", ".join(hosts) or "none"
            raise ToolFailure(
                NOT_ALLOWED,
                f"'{host}' is not on the web_fetch allowlist for tasks from channel "
                f"'{channel}' (allowed: {allowed})",
            )
        literal = parse_ip(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                found = await self.resolver(host, url.port or _default_port(url))
            except OSError as exc:
                raise ToolFailure(INVALID_PARAMS, f"'{host}' could not be resolved: {exc}") from exc
            addresses = [ip for ip in (parse_ip(a) for a in found) if ip is not None]
            if not addresses:
                raise ToolFailure(INVALID_PARAMS, f"'{host}' resolves to no address")
        named = host in self.names
        for ip in addresses:
            reason = address_refusal(ip, self.networks, named)
            if reason is not None:
                shown = f"'{host}' resolves to {reason}" if literal is None else reason
                raise ToolFailure(
                    NOT_ALLOWED, f"{shown}: private and local networks are not fetched"
                )
        return connect_address(addresses[0])

    async def fetch(self, raw_url: str, hosts: list[str] | None, channel: str) -> dict[str, Any]:
        try:
            url = httpx.URL(raw_url.strip())
        except httpx.InvalidURL as exc:
            raise ToolFailure(INVALID_PARAMS, f"not a valid URL: {exc}") from exc
        hops: list[str] = []
        for _ in range(self.settings.max_redirects + 1):
            address = await self.check(url, hosts, channel)
            hops.append(str(url))
            status, headers, body, truncated = await self._get(url, address)
            location = headers.get("location")
            if status in (301, 302, 303, 307, 308) and location:
                try:
                    url = url.join(location)
                except httpx.InvalidURL as exc:
                    raise ToolFailure(INVALID_PARAMS, f"bad redirect to {location!r}") from exc
                continue
            return await _describe(
                url, status, headers, body, truncated, hops, self.settings.max_chars
            )
        raise ToolFailure(
            INVALID_PARAMS,
            f"more than {self.settings.max_redirects} redirects: {' -> '.join(hops)}",
        )

    async def _get(self, url: httpx.URL, address: str) -> tuple[int, httpx.Headers, bytes, bool]:
        headers = {
            "User-Agent": self.settings.user_agent,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "identity",
        }
        transport = _pinned_transport(url.raw_host.decode("ascii"), address)
        async with httpx.AsyncClient(
            transport=transport, follow_redirects=False, trust_env=False, timeout=None
        ) as client:
            try:
                async with client.stream("GET", url, headers=headers) as response:
                    encoding = response.headers.get("content-encoding", "identity").lower()
                    if encoding not in ("", "identity"):
                        raise ToolFailure(
                            INVALID_PARAMS,
                            f"{url} answered with {encoding}-compressed content, which "
                            "web_fetch does not accept (it could hide any size)",
                        )
                    body, truncated = await _read_capped(response, self.settings.max_bytes)
                    return response.status_code, response.headers, body, truncated
            except httpx.HTTPError as exc:
                raise ToolFailure(INTERNAL, f"fetching {url} failed: {exc}") from exc


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


async def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """The body up to ``cap`` bytes, and whether there was more (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        room = cap - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


async def _describe(
    url: httpx.URL,
    status: int,
    headers: httpx.Headers,
    body: bytes,
    truncated: bool,
    hops: list[str],
    max_chars: int,
) -> dict[str, Any]:
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type and not content_type.startswith(TEXT_TYPES):
        raise ToolFailure(
            INVALID_PARAMS,
            f"{url} is {content_type} ({len(body)} bytes read); web_fetch reads text and HTML",
        )
    charset = httpx.Response(status, headers=headers).charset_encoding or "utf-8"
    try:
        decoded = body.decode(charset, errors="replace")
    except LookupError:
        decoded = body.decode("utf-8", errors="replace")
    is_html = "html" in content_type or (not content_type and "<html" in decoded[:2000].lower())
    title, text = await asyncio.to_thread(page_text, decoded, str(url), is_html)
    cut = len(text) > max_chars
    return {
        "url": str(url),
        "status": status,
        "title": title,
        "content_type": content_type or None,
        "text": text[:max_chars],
        "text_truncated": cut,
        "chars": len(text),
        "bytes": len(body),
        "body_truncated": truncated,
        "redirects": hops[:-1],
    }
