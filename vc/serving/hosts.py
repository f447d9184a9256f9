"""Which Host headers `vc serve` answers: the guard against DNS rebinding.

A page on any site can make a browser resolve a name of its own to 127.0.0.1 and then call the local
server with that name in the Host header; a server that answers only the names it is known by
(loopback names, plus those given with --allow-host) turns such requests away, as Jupyter does.
"""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = "localhost, 127.0.0.1 and [::1]"


def is_loopback(name: str) -> bool:
    """Whether a host name or address (without port or brackets) always means this machine."""
    name = name.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: never resolved by DNS
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header: 'example.org:8000' -> 'example.org', '[::1]:8000' -> '::1'."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HostCheck:
    """Loopback names always; ``allowed`` names (case-insensitive) too."""

    def __init__(self, allowed=()):
        self.allowed = frozenset(host_name(name) for name in allowed)

    def refusal(self, header: str) -> str | None:
        """None when the Host header names this server, else the message to refuse it with."""
        name = host_name(header)
        if is_loopback(name) or name in self.allowed:
            return None
        listed = LOOPBACK_NAMES + "".join(f", {n}" for n in sorted(self.allowed))
        return (
            f"this server answers requests to {listed} only, not to host {name[:100]!r}; "
            "start it with --allow-host NAME to be reached by another name"
        )
