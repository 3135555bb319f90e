"""``requests`` over httpdnsd: IP-direct connections and the machine's shared cookie jar.

    import httpdns.requests
    session = httpdns.requests.Session()
    session.post("https://login.example.com/login", data={"user": "alice"})   # 302s followed

Each request resolves its URL's host through the daemon and connects to those addresses in turn
(the next one when a connection fails), while the URL, the Host header, TLS SNI and the
certificate check keep the host name. Connections are pooled per host and addresses, so a host
whose answer changed gets new connections. Every hop, redirects included (followed by requests
with its own rules for the method), sends the daemon's Cookie header for its URL and stores its
Set-Cookie values through the daemon for that URL; the session keeps no cookies of its own.
With a proxy for a URL, requests' own proxy handling applies (no IP-direct connection) and the
cookies still go through the daemon.
"""

from __future__ import annotations

import http.cookiejar
from typing import Any

import requests
import requests.adapters
import requests.cookies
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
import urllib3.poolmanager
import urllib3.util.connection

from ._client import Client, url_host
from ._errors import HTTPDNSError

__all__ = ["HTTPAdapter", "Session"]


class _IPDirect:
    """Mixed into urllib3's connections: connects to the daemon's addresses for the host, in
    turn, instead of looking the host up; everything else (TLS with the host name) is urllib3's."""

    def __init__(self, *args: Any, httpdns_addresses: tuple[str, ...] = (), **kwargs: Any):
        self.httpdns_addresses = httpdns_addresses
        super().__init__(*args, **kwargs)

    def _new_conn(self) -> Any:
        failures = []
        for address in self.httpdns_addresses:
            try:
                return urllib3.util.connection.create_connection(
                    (address, self.port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options)
            except TimeoutError as error:
                failures.append((address, error))
            except OSError as error:
                failures.append((address, error))
        described = "; ".join(f"{address}: {error or type(error).__name__}" for address, error in failures)
        if failures and all(isinstance(error, TimeoutError) for _, error in failures):
            raise urllib3.exceptions.ConnectTimeoutError(
                self, f"Connection to {self.host} timed out at every address (connect timeout={self.timeout}): "
                      f"{described}")
        raise urllib3.exceptions.NewConnectionError(
            self, f"Failed to establish a new connection to {self.host} at any of its addresses: {described}")


class _HTTPConnection(_IPDirect, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_IPDirect, urllib3.connection.HTTPSConnection):
    pass


class _HTTPConnectionPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSConnectionPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class _ResolveFailed(Exception):
    def __init__(self, host: str, error: HTTPDNSError):
        super().__init__(f"httpdnsd could not resolve {host}: {error}")
        self.error = error


class _PoolManager(urllib3.poolmanager.PoolManager):
    """A PoolManager whose pools are per scheme, host, port and the daemon's addresses for the host."""

    def __init__(self, client: Client, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.httpdns = client
        self.pool_classes_by_scheme = {"http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}

    def connection_from_context(self, request_context: dict[str, Any]) -> Any:
        scheme = request_context["scheme"].lower()
        if scheme not in self.pool_classes_by_scheme:
            return super().connection_from_context(request_context)
        host = request_context["host"]
        try:
            addresses = tuple(self.httpdns.resolve(host.strip("[]")).addresses)
        except HTTPDNSError as error:
            raise _ResolveFailed(host, error) from error
        pool_key = (self.key_fn_by_scheme[scheme](request_context), addresses)
        context = dict(request_context, httpdns_addresses=addresses)
        with self.pools.lock:
            pool = self.pools.get(pool_key)
            if pool:
                return pool
            pool = self._new_pool(scheme, host, request_context["port"], request_context=context)
            self.pools[pool_key] = pool
        return pool


class HTTPAdapter(requests.adapters.HTTPAdapter):
    """A transport adapter that connects IP-direct through the daemon and carries each hop's
    cookies through the daemon's jar. Mount it on any ``requests.Session`` whose own jar is
    left empty (`Session` does both)."""

    def __init__(self, client: Client | None = None, **kwargs: Any):
        self.httpdns = client if client is not None else Client()
        super().__init__(**kwargs)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        self._pool_connections = connections
        self._pool_maxsize = maxsize
        self._pool_block = block
        self.poolmanager = _PoolManager(self.httpdns, num_pools=connections, maxsize=maxsize, block=block,
                                        **pool_kwargs)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.httpdns = Client()
        super().__setstate__(state)

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        request = request.copy()
        host = url_host(request.url)
        jar_header = self.httpdns.get_cookie_header(request.url, host)
        if jar_header:
            own = request.headers.get("Cookie")
            request.headers["Cookie"] = f"{jar_header}; {own}" if own else jar_header
        try:
            response = super().send(request, *args, **kwargs)
        except _ResolveFailed as failed:
            raise requests.exceptions.ConnectionError(str(failed), request=request) from failed.error
        set_cookie = response.raw.headers.getlist("Set-Cookie") if response.raw is not None else []
        if set_cookie:
            self.httpdns.handle_set_cookie(request.url, set_cookie, host)
        return response


class _NoCookies(requests.cookies.RequestsCookieJar):
    """The session's own jar: holds nothing, so every cookie goes through the daemon."""

    def set_cookie(self, cookie: http.cookiejar.Cookie, *args: Any, **kwargs: Any) -> None:
        raise TypeError("httpdns.requests.Session keeps no cookies: the daemon's jar holds them "
                        "(use session.httpdns.handle_set_cookie)")

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass  # the adapter stored them through the daemon

    def set_cookie_if_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> None:
        pass


class _RequestCookies(requests.cookies.RequestsCookieJar):
    """The cookies given to one request (``cookies=``), sent on each of its hops as requests
    does; the responses' cookies go to the daemon, not here."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass

    def copy(self) -> _RequestCookies:
        copied = _RequestCookies()
        copied.set_policy(self.get_policy())
        copied.update(self)
        return copied


class Session(requests.Session):
    """A ``requests.Session`` on the machine's shared session: IP-direct through httpdnsd, with
    every cookie in the daemon's jar (``session.cookies`` stays empty; ``session.httpdns`` is
    the `Client`, for ``list_cookies`` and the rest)."""

    def __init__(self, client: Client | None = None, *, socket: str | None = None):
        super().__init__()
        self.httpdns = client if client is not None else Client(socket)
        self.cookies = _NoCookies()
        self.mount("https://", HTTPAdapter(self.httpdns))
        self.mount("http://", HTTPAdapter(self.httpdns))

    def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
        prepared = super().prepare_request(request)
        own = _RequestCookies()
        own.update(prepared._cookies)
        prepared._cookies = own
        return prepared
