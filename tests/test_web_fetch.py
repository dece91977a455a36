"""web_fetch against a real HTTP server on 127.0.0.1 (allowlisted where a test needs it):
text extraction, caps, the timeout, redirects into private networks, names that resolve
to private addresses (an injected resolver: no real DNS), IPv6 and IPv4-mapped forms, and
the pinning of the connection to the address that was checked.

The session's network guard (tests/conftest.py) fails the run if anything connects
beyond loopback, so a refused private address is also proven never to be dialled.
"""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import Settings
from jarvis.tools.context import ToolContext
from jarvis.tools.policy_settings import ToolPolicy
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS, NOT_ALLOWED, TIMEOUT, ToolResult
from jarvis.tools.toolbox_settings import ChannelPolicy, ToolboxSettings, WebSettings
from jarvis.tools.web import register_web_tools
from jarvis.tools.web_guard import address_refusal, embedded_ipv4, parse_allowlist

ARTICLE = (
    "<html><head><title>Weather report</title><script>var tracking = 1;</script></head>"
    "<body><nav>Home | Sports | Login</nav><article><h1>Sunny in Lisbon</h1>"
    + "".join(
        f"<p>Hour {h}: the forecast says clear skies and a light breeze.</p>" for h in range(12)
    )
    + "</article><footer>Copyright footer text</footer></body></html>"
)


class Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.hosts: list[str] = []
        self.release = threading.Event()
        self.sent_big = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that stops reading at its cap is what the tests want


class Handler(BaseHTTPRequestHandler):
    server: Site

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("Host", ""))
        port = self.server.server_address[1]
        routes = {
            "/article": lambda: self._send(200, ARTICLE.encode()),
            "/plain": lambda: self._send(200, b"just text\n", "text/plain"),
            "/binary": lambda: self._send(200, b"\x00\x01" * 50, "application/octet-stream"),
            "/gzip": self._gzip,
            "/to-article": lambda: self._redirect("/article"),
            "/to-private": lambda: self._redirect("http://10.1.2.3/admin"),
            "/to-metadata": lambda: self._redirect("http://169.254.169.254/latest/meta-data"),
            "/to-name": lambda: self._redirect(f"http://intranet.example:{port}/article"),
            "/to-ftp": lambda: self._redirect("ftp://127.0.0.1/file"),
            "/loop": lambda: self._redirect("/loop"),
        }
        if self.path == "/big":
            self._big()
        elif self.path == "/hang":
            self.server.release.wait(10)
            self._send(200, b"late")
        elif self.path in routes:
            routes[self.path]()
        else:
            self._send(404, b"<html><title>Not found</title><body>nothing</body></html>")

    def _gzip(self) -> None:
        import gzip

        body = gzip.compress(b"<p>" + b"zero " * 100_000 + b"</p>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _big(self) -> None:
        chunk = b"<p>" + b"filler text " * 1000 + b"</p>\n"
        total = 3 * 1024 * 1024
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(total))
        self.end_headers()
        try:
            while self.server.sent_big < total:
                piece = chunk[: total - self.server.sent_big]
                self.wfile.write(piece)
                self.server.sent_big += len(piece)
        except OSError:  # the client stopped reading at its cap
            pass


@pytest.fixture(scope="module")
def _server() -> Iterator[Site]:
    server = Site()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def site(_server: Site) -> Iterator[Site]:
    _server.hosts.clear()
    _server.sent_big = 0
    yield _server
    _server.release.set()  # a handler left hanging answers now
    _server.release = threading.Event()


class FakeDNS:
    """A hosts-file resolver: names to address lists, and a count of lookups."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.table:
            raise OSError(f"no such host {host}")
        answer = self.table[host]
        if len(answer) > 1 and host.startswith("rebind"):  # a DNS that changes its answer
            return [answer[min(len(self.lookups) - 1, len(answer) - 1)]]
        return answer


def fetch(
    url: str,
    *,
    dns: FakeDNS | None = None,
    channels: tuple[str, ...] = (),
    per_channel: dict[str, ChannelPolicy] | None = None,
    tmp_path: Path,
    **web: Any,
) -> ToolResult:
    web.setdefault("allow_private", [])
    tools = ToolPolicy(per_channel=per_channel) if per_channel is not None else ToolPolicy()
    settings = Settings(
        data_dir=tmp_path, tools=tools, toolbox=ToolboxSettings(web=WebSettings(**web))
    )
    registry = ToolRegistry(settings)
    register_web_tools(registry, settings.toolbox.web, dns or FakeDNS({}))
    ctx = ToolContext.for_task(settings, "t-web", channels=channels)
    return asyncio.run(registry.execute("web_fetch", {"url": url}, ctx))


LOOPBACK = ["127.0.0.1"]


def test_html_becomes_readable_text_with_title_and_final_url(site: Site, tmp_path: Path) -> None:
    result = fetch(f"{site.base}/to-article", allow_private=LOOPBACK, tmp_path=tmp_path)
    assert result.ok, result.error
    data = result.data
    assert data["title"] == "Weather report"
    assert data["url"] == f"{site.base}/article"
    assert data["redirects"] == [f"{site.base}/to-article"]
    assert data["text"].startswith("Sunny in Lisbon")
    assert "clear skies" in data["text"]
    assert "tracking" not in data["text"] and "Login" not in data["text"]
    assert data["status"] == 200 and not data["text_truncated"]
    assert site.hosts[-1] == f"127.0.0.1:{site.server_address[1]}"

    plain = fetch(f"{site.base}/plain", allow_private=LOOPBACK, tmp_path=tmp_path)
    assert plain.data["text"] == "just text" and plain.data["title"] is None
    missing = fetch(f"{site.base}/nothing-here", allow_private=LOOPBACK, tmp_path=tmp_path)
    assert missing.ok and missing.data["status"] == 404


def test_text_and_body_caps(site: Site, tmp_path: Path) -> None:
    cut = fetch(f"{site.base}/article", allow_private=LOOPBACK, max_chars=120, tmp_path=tmp_path)
    assert len(cut.data["text"]) == 120 and cut.data["text_truncated"]
    assert cut.data["chars"] > 120

    big = fetch(f"{site.base}/big", allow_private=LOOPBACK, max_bytes=100_000, tmp_path=tmp_path)
    assert big.ok, big.error
    assert big.data["bytes"] == 100_000 and big.data["body_truncated"] is True
    assert "filler text" in big.data["text"]

    bomb = fetch(f"{site.base}/gzip", allow_private=LOOPBACK, tmp_path=tmp_path)
    assert bomb.error is not None and bomb.error.code == INVALID_PARAMS
    assert "gzip-compressed" in bomb.error.message

    binary = fetch(f"{site.base}/binary", allow_private=LOOPBACK, tmp_path=tmp_path)
    assert binary.error is not None and binary.error.code == INVALID_PARAMS
    assert "application/octet-stream" in binary.error.message


def test_a_hanging_server_ends_at_the_timeout(site: Site, tmp_path: Path) -> None:
    result = fetch(f"{site.base}/hang", allow_private=LOOPBACK, timeout_s=0.5, tmp_path=tmp_path)
    assert result.error is not None and result.error.code == TIMEOUT
    assert "0.5s" in result.error.message


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/to-private", "10.1.2.3, a private address"),
        ("/to-metadata", "169.254.169.254, a link-local address"),
        ("/to-name", "'intranet.example' resolves to 192.168.7.9, a private address"),
        ("/to-ftp", "only http and https"),
    ],
)
def test_redirects_are_checked_again(site: Site, tmp_path: Path, path: str, reason: str) -> None:
    dns = FakeDNS({"intranet.example": ["192.168.7.9"]})
    result = fetch(f"{site.base}{path}", dns=dns, allow_private=LOOPBACK, tmp_path=tmp_path)
    assert result.error is not None and result.error.code == NOT_ALLOWED
    assert reason in result.error.message
    assert len(site.hosts) == 1  # only the allowed first hop was served


def test_redirect_loops_end(site: Site, tmp_path: Path) -> None:
    result = fetch(f"{site.base}/loop", allow_private=LOOPBACK, max_redirects=3, tmp_path=tmp_path)
    assert result.error is not None and result.error.code == INVALID_PARAMS
    assert "more than 3 redirects" in result.error.message
    assert len(site.hosts) == 4


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        ({"intranet.example": ["192.168.1.5"]}, "192.168.1.5, a private address"),
        ({"intranet.example": ["93.184.216.34", "10.0.0.7"]}, "10.0.0.7, a private address"),
        ({"intranet.example": ["::1"]}, "::1, a loopback address"),
        (
            {"intranet.example": ["::ffff:10.0.0.1"]},
            "::ffff:a00:1 (carrying 10.0.0.1), a private address",
        ),
        ({"intranet.example": ["127.0.0.1"]}, "127.0.0.1, a loopback address"),
    ],
)
def test_names_that_resolve_to_private_addresses_are_refused(
    tmp_path: Path, table: dict[str, list[str]], reason: str
) -> None:
    dns = FakeDNS(table)
    result = fetch("https://intranet.example/page", dns=dns, tmp_path=tmp_path)
    assert result.error is not None and result.error.code == NOT_ALLOWED
    assert reason in result.error.message
    assert "'intranet.example' resolves to" in result.error.message
    assert dns.lookups == ["intranet.example"]


IP_FORMS = [
    "http://127.0.0.1:{port}/article",
    "http://[::1]:{port}/article",
    "http://[::ffff:127.0.0.1]:{port}/article",
    "http://[::ffff:7f00:1]:{port}/article",
    "http://[::ffff:10.0.0.1]/",
    "http://[fe80::1]/",
    "http://[fc00::5]/",
    "http://[::]/",
    "http://0.0.0.0/",
    "http://[ff02::1]/",
    "http://[64:ff9b::a00:1]/",
    "http://[2002:c0a8:101::1]/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://100.64.0.1/",
]


@pytest.mark.parametrize("form", IP_FORMS)
def test_ip_literal_forms_are_refused_without_an_allowlist(
    site: Site, tmp_path: Path, form: str
) -> None:
    result = fetch(form.format(port=site.server_address[1]), tmp_path=tmp_path)
    assert result.error is not None and result.error.code == NOT_ALLOWED, result
    assert "not fetched" in result.error.message
    assert site.hosts == []


def test_the_ipv4_mapped_form_of_an_allowlisted_address_connects_to_it(
    site: Site, tmp_path: Path
) -> None:
    url = f"http://[::ffff:127.0.0.1]:{site.server_address[1]}/plain"
    result = fetch(url, allow_private=LOOPBACK, tmp_path=tmp_path)
    assert result.ok, result.error
    assert result.data["text"] == "just text"


def test_the_connection_goes_to_the_address_that_was_checked(site: Site, tmp_path: Path) -> None:
    """A DNS that answers 127.0.0.1 (allowed) then 10.0.0.1: one lookup, the checked
    address is dialled, and the Host header keeps the name."""
    port = site.server_address[1]
    dns = FakeDNS({"rebind.test": ["127.0.0.1", "10.0.0.1"]})
    result = fetch(
        f"http://rebind.test:{port}/plain", dns=dns, allow_private=LOOPBACK, tmp_path=tmp_path
    )
    assert result.ok, result.error
    assert dns.lookups == ["rebind.test"]
    assert site.hosts == [f"rebind.test:{port}"]
    dotted = fetch(
        f"http://rebind.test.:{port}/plain",
        dns=FakeDNS({"rebind.test": ["127.0.0.1"]}),
        allow_private=LOOPBACK,
        tmp_path=tmp_path,
    )
    assert dotted.ok, dotted.error


def test_schemes_credentials_and_the_email_channel(site: Site, tmp_path: Path) -> None:
    for url, reason in [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://127.0.0.1/", "only http and https"),
        (f"http://user:pw@127.0.0.1:{site.server_address[1]}/plain", "user name or password"),
    ]:
        result = fetch(url, allow_private=LOOPBACK, tmp_path=tmp_path)
        assert result.error is not None and result.error.code == NOT_ALLOWED
        assert reason in result.error.message
    by_mail = fetch(
        f"{site.base}/plain", allow_private=LOOPBACK, channels=("email",), tmp_path=tmp_path
    )
    assert by_mail.error is not None and by_mail.error.code == NOT_ALLOWED
    assert "allowlist for tasks from channel 'email'" in by_mail.error.message
    assert site.hosts == []
    allowed = fetch(
        f"{site.base}/plain",
        allow_private=LOOPBACK,
        channels=("email",),
        per_channel={"email": ChannelPolicy(deny=["write_file"], web_hosts=["127.0.0.1"])},
        tmp_path=tmp_path,
    )
    assert allowed.ok, allowed.error


@pytest.mark.parametrize(
    ("address", "allow", "refused"),
    [
        ("8.8.8.8", [], None),
        ("2606:4700:4700::1111", [], None),
        ("127.0.0.1", [], "loopback"),
        ("127.0.0.1", ["127.0.0.0/8"], None),
        ("10.0.0.1", ["127.0.0.1"], "private"),
        ("::ffff:127.0.0.1", ["127.0.0.1"], None),
        ("::ffff:127.0.0.1", [], "loopback"),
        ("::ffff:8.8.8.8", [], None),
        ("64:ff9b::7f00:1", [], "loopback"),
        ("2002:7f00:1::", [], "loopback"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", [], "private"),  # Teredo carrying 10.0.0.1
        ("fe80::1", [], "link-local"),
        ("ff02::1", [], "multicast"),
        ("::", [], "unspecified"),
        ("192.0.2.1", [], "private"),
        ("0.0.0.0", [], "unspecified"),
    ],
)
def test_address_table(address: str, allow: list[str], refused: str | None) -> None:
    networks, _ = parse_allowlist(allow)
    reason = address_refusal(ipaddress.ip_address(address), networks)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason


def test_embedded_ipv4() -> None:
    assert str(embedded_ipv4(ipaddress.ip_address("::ffff:1.2.3.4"))) == "1.2.3.4"
    assert str(embedded_ipv4(ipaddress.ip_address("64:ff9b::102:304"))) == "1.2.3.4"
    assert embedded_ipv4(ipaddress.ip_address("2606:4700::1")) is None
