"""What the HTTP adapters share: the host name a request is for, and the report of refused cookies."""

from __future__ import annotations

import contextvars
import ipaddress
import logging
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ._client import url_host
from ._types import StoredCookies

log = logging.getLogger("httpdns")


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        return True
    except ValueError:
        return False


def header_host(value: str | bytes | None) -> str | None:
    """The host name of a Host header's value (its port dropped), or None for none or an IP literal."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if not value:
        return None
    host = urllib.parse.urlsplit("//" + value.strip()).hostname
    if not host or is_ip_literal(host):
        return None
    return host


def request_host(url: str, host_header: str | bytes | None) -> str | None:
    """The host name a request's cookies and TLS are for: the URL's, or for an IP-literal URL the
    Host header's (None when neither names one: then the daemon's address memory decides)."""
    return url_host(url) or (header_host(host_header) if urllib.parse.urlsplit(url).hostname else None)


def report_rejected(url: str, values: Sequence[str], stored: StoredCookies) -> None:
    """Logs each Set-Cookie value the daemon refused (logger ``httpdns``, level WARNING)."""
    for rejection in stored.rejected:
        value = values[rejection.index] if 0 <= rejection.index < len(values) else "?"
        name = value.split(";", 1)[0].split("=", 1)[0].strip()
        log.warning("httpdnsd refused the cookie %r set by %s for %s: %s", name, url, stored.host, rejection.reason)


@dataclass
class Route:
    """Where the request in progress connects: its host's addresses as the daemon answered,
    whether that answer was stale, and how to ask again for a fresh one."""

    host: str
    stale: bool
    refresh: Callable[[], Any] | None = None


# The route of the request this thread or task is sending: read by the connecting code, which
# httpcore and urllib3 call in the sender's thread or task.
current_route: contextvars.ContextVar[Route | None] = contextvars.ContextVar("httpdns_route", default=None)
