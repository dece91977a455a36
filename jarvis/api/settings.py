"""Settings of the control API (``api`` in settings.json; ``JARVIS_API__HTTP`` and so on)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, field_validator

DEFAULT_PORT = 8765
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


class HttpAddress(BaseModel):
    """Where the API listens over TCP; ``explicit`` when the user named the host."""

    host: str
    port: int
    explicit: bool = False

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK_NAMES

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host


def parse_http(spec: str) -> HttpAddress | None:
    """``HOST:PORT``, ``:PORT``, ``PORT`` or ``HOST`` (port 8765); ``off`` is None.
    Raises ValueError for anything else. Without a host, the API binds to 127.0.0.1."""
    spec = spec.strip()
    if spec.lower() == "off":
        return None
    host, port_text = "", ""
    if spec.startswith("["):  # [::1]:8765
        end = spec.find("]")
        if end < 0:
            raise ValueError(f"not HOST:PORT: {spec!r}")
        host, rest = spec[1:end], spec[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"not HOST:PORT: {spec!r}")
        port_text = rest[1:]
    elif spec.count(":") == 1:
        host, port_text = spec.split(":")
    elif spec.isdigit():
        port_text = spec
    elif ":" not in spec:
        host = spec
    else:
        raise ValueError(f"not HOST:PORT (write an IPv6 host in brackets): {spec!r}")
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
    except ValueError:
        raise ValueError(f"not a port number: {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port out of range: {port}")
    if host and any(c.isspace() or c in "/?#@" for c in host):
        raise ValueError(f"not a host name: {host!r}")
    return HttpAddress(host=host or "127.0.0.1", port=port, explicit=bool(host))


class ApiSettings(BaseModel):
    """The control API of ``jarvis serve``."""

    http: str = Field(f"127.0.0.1:{DEFAULT_PORT}", description="HOST:PORT to listen on, or 'off'")
    unix_socket: Path | None = Field(None, description="also listen on this Unix socket")
    queue_size: int = Field(
        1000, ge=8, description="events held for a slow stream client before it gets a gap"
    )
    heartbeat_s: float = Field(15.0, gt=0, description="idle time before an SSE comment")

    @field_validator("http")
    @classmethod
    def _http(cls, value: str) -> str:
        parse_http(value)
        return value
