"""Which addresses and hosts ``web_fetch`` may reach: pure functions, table-tested.

Every address a host resolves to is checked; one bad address refuses the host (an
attacker's DNS could answer with a public and a private address and let the connection
pick). IPv6 addresses that carry an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64
``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo) are checked as that IPv4 address too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def parse_ip(text: str) -> IPAddress | None:
    """An IP literal (brackets and an IPv6 zone allowed), else None."""
    text = text.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, Teredo), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def _kind(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public address, or None when it is."""
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if ip.is_reserved:
        return "reserved"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "site-local"
    if not ip.is_global:
        return "non-public"
    return None


def parse_allowlist(entries: Iterable[str]) -> tuple[list[IPNetwork], set[str]]:
    """Allowlist entries as (networks, host names)."""
    networks: list[IPNetwork] = []
    names: set[str] = set()
    for entry in entries:
        text = entry.strip().lower()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
        except ValueError:
            names.add(text.rstrip("."))
    return networks, names


def address_refusal(
    ip: IPAddress, networks: Iterable[IPNetwork] = (), host_allowed: bool = False
) -> str | None:
    """None when ``ip`` may be reached, else why not (``10.0.0.7, a private address``).

    ``networks`` and ``host_allowed`` (the host name is on the allowlist) let a
    non-public address through. An IPv4-mapped address is judged as its IPv4 address;
    an address that carries another (NAT64, 6to4, Teredo) must pass with both.
    """
    if host_allowed:
        return None
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    inner = embedded_ipv4(ip)
    candidates: list[IPAddress] = [mapped] if mapped is not None else [ip]
    if mapped is None and inner is not None:
        candidates.insert(0, inner)  # the carried address first: it names the real target
    nets = list(networks)
    for candidate in candidates:
        kind = _kind(candidate)
        if kind is None or any(candidate.version == n.version and candidate in n for n in nets):
            continue
        shown = f"{ip} (carrying {candidate})" if candidate is not ip else str(ip)
        return f"{shown}, a {kind} address"
    return None


def connect_address(ip: IPAddress) -> str:
    """The address to connect to: an IPv4-mapped IPv6 address as its IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def host_in(host: str, allowed: Iterable[str]) -> bool:
    """``host`` is one of ``allowed`` or a subdomain of one."""
    host = host.lower().rstrip(".")
    return any(host == a or host.endswith("." + a) for a in allowed)
