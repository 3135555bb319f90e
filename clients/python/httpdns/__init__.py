"""httpdns: the Python client of httpdnsd, the machine's HTTPDNS cache and shared cookie jar.

``httpdns.Client()`` speaks httpdnsd-rpc(7) over the daemon's Unix socket. The HTTP adapters
make ordinary HTTP calls go IP-direct through the daemon's answers with the machine's shared
session (imported on demand, so that the HTTP libraries stay optional):

- ``httpdns.requests.Session()``: a ``requests.Session``;
- ``httpdns.httpx.Client()`` and ``httpdns.httpx.AsyncClient()``: ``httpx`` clients;
- ``httpdns.cookiejar.DaemonCookieJar()``: an ``http.cookiejar.CookieJar`` for ``urllib.request``.
"""

from ._client import Client, Monitor, url_host
from ._connection import SYSTEM_SOCKET, socket_path
from ._errors import AmbiguousAddress, CallTimeout, DaemonUnavailable, HTTPDNSError, ProtocolError, RPCError
from ._types import (CacheCounters, CacheEntry, Cookie, CookieCounters, CookieHeader, ExportedCookies, FamilyTTLs,
                     FleetStatus, LeftOutCookie, MetricsText, NetworkStatus, Rejection, Resolution, ReverseLookup,
                     ReverseName, ServiceAddress, ServiceAddresses, Statistics, Status, StoredCookies,
                     UpstreamCounters, UpstreamStatus)

__version__ = "0.1.0"

__all__ = [
    "SYSTEM_SOCKET", "AmbiguousAddress", "CacheCounters", "CacheEntry", "CallTimeout", "Client", "Cookie",
    "CookieCounters", "CookieHeader", "DaemonUnavailable", "ExportedCookies", "FamilyTTLs", "FleetStatus",
    "HTTPDNSError", "LeftOutCookie", "MetricsText", "Monitor", "NetworkStatus", "ProtocolError", "RPCError",
    "Rejection", "Resolution", "ReverseLookup", "ReverseName", "ServiceAddress", "ServiceAddresses", "Statistics",
    "Status", "StoredCookies", "UpstreamCounters", "UpstreamStatus",
    "socket_path", "url_host",
]
