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

An IP-literal URL with a ``Host`` header (or ``host=``) is that host at that address:

    session.post("https://203.0.113.10/login", headers={"Host": "app.example.com"}, data=...)
    session.post("https://203.0.113.10/login", host="app.example.com", data=...)   # the same

connects to 203.0.113.10, with SNI, the certificate check, the Host header and the cookies for
app.example.com; a redirect to another origin does not carry that Host header. Without a host
name, an address this user's answers give for several hosts raises `AmbiguousAddressError`
(naming them) before anything is sent. When every address of a stale answer fails to connect,
the daemon is asked once for a fresh answer, which is tried next. Cookies the daemon refuses
are logged (logger ``httpdns``, WARNING); failed daemon calls raise requests exceptions that
are also the httpdns error (``requests.ConnectionError`` for a daemon that cannot be reached).
"""

from __future__ import annotations

import contextvars
import http.cookiejar
import urllib.parse
from typing import Any

import requests
import requests.adapters
import requests.cookies
import requests.structures
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
import urllib3.poolmanager
import urllib3.util.connection

from ._adapters import Route, current_route, is_ip_literal, report_rejected, request_host
from ._client import Client, url_host
from ._errors import AmbiguousAddress, CallTimeout, DaemonUnavailable, HTTPDNSError, ProtocolError, RPCError

__all__ = ["AmbiguousAddressError", "DaemonProtocolError", "DaemonRPCError", "DaemonTimeout", "DaemonUnavailableError", "HTTPAdapter",
           "ResolveError", "Session"]


class _IPDirect:
    """Mixed into urllib3's connections: connects to the daemon's addresses for the host, in
    turn, instead of looking the host up; everything else (TLS with the host name) is urllib3's.
    When every address of a stale answer fails, it asks the daemon once for a fresh answer and
    tries that."""

    def __init__(self, *args: Any, httpdns_addresses: tuple[str, ...] = (), **kwargs: Any):
        self.httpdns_addresses = httpdns_addresses
        super().__init__(*args, **kwargs)

    def _connect_to(self, addresses: tuple[str, ...], failures: list[tuple[str, OSError]]) -> Any:
        for address in addresses:
            try:
                return urllib3.util.connection.create_connection(
                    (address, self.port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options)
            except OSError as error:
                failures.append((address, error))
        return None

    def _new_conn(self) -> Any:
        failures: list[tuple[str, OSError]] = []
        connection = self._connect_to(self.httpdns_addresses, failures)
        if connection is not None:
            return connection
        route = current_route.get()
        if route is not None and route.stale and route.refresh is not None and route.host == self.host:
            try:
                fresh = route.refresh()
            except HTTPDNSError as error:
                raise _ResolveFailed(self.host, error) from error
            connection = self._connect_to(fresh, failures)
            if connection is not None:
                return connection
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


# The host name an IP-literal URL's request is for (its Host header), for SNI and the certificate.
_server_name: contextvars.ContextVar[str | None] = contextvars.ContextVar("httpdns_server_name", default=None)


class _PoolManager(urllib3.poolmanager.PoolManager):
    """A PoolManager whose pools are per scheme, host, port, TLS server name and the daemon's
    addresses for the host."""

    def __init__(self, client: Client, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.httpdns = client
        self.pool_classes_by_scheme = {"http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}

    def connection_from_context(self, request_context: dict[str, Any]) -> Any:
        scheme = request_context["scheme"].lower()
        if scheme not in self.pool_classes_by_scheme:
            return super().connection_from_context(request_context)
        host = request_context["host"]
        if is_ip_literal(host):
            addresses: tuple[str, ...] = (host.strip("[]"),)
            name = _server_name.get()
            if name is not None and scheme == "https":
                request_context = dict(request_context, server_hostname=name)
        else:
            try:
                resolution = self.httpdns.resolve(host)
            except HTTPDNSError as error:
                raise _ResolveFailed(host, error) from error
            addresses = tuple(resolution.addresses)
            if resolution.stale:
                current_route.set(Route(host, True, lambda: tuple(
                    self.httpdns.resolve(host, allow_stale=False).addresses)))
        pool_key = (self.key_fn_by_scheme[scheme](request_context), addresses)
        context = dict(request_context, httpdns_addresses=addresses)
        with self.pools.lock:
            pool = self.pools.get(pool_key)
            if pool:
                return pool
            pool = self._new_pool(scheme, host, request_context["port"], request_context=context)
            self.pools[pool_key] = pool
        return pool


class DaemonUnavailableError(requests.exceptions.ConnectionError, DaemonUnavailable):
    """The daemon could not be reached for a request's cookies or addresses (``__cause__`` is
    the `httpdns.DaemonUnavailable`)."""


class DaemonTimeout(requests.exceptions.ConnectionError, CallTimeout):
    """The daemon did not answer a request's cookie or address call in time."""


class DaemonRPCError(requests.exceptions.RequestException, RPCError):
    """The daemon refused a request's cookie call (an `httpdns.RPCError` too, with its code,
    name and data: ``reason`` "ambiguous-address" when an IP-literal URL needs a Host header)."""


class AmbiguousAddressError(DaemonRPCError, AmbiguousAddress):
    """An IP-literal URL without a Host header (or ``host=``) whose address names several hosts
    (``candidates``); raised before the request is sent."""


class ResolveError(requests.exceptions.ConnectionError, RPCError):
    """The daemon had no address for the request's host (HostNotFound, ...)."""


class DaemonProtocolError(requests.exceptions.RequestException, ProtocolError):
    """The daemon's answer to a request's call was malformed."""


def _requests_error(error: HTTPDNSError, request: requests.PreparedRequest,
                    resolving: str | None = None) -> requests.exceptions.RequestException:
    """``error`` as a requests exception that is also an error of its httpdns class
    (``resolving``: the sentence of a failed resolve, which is a ConnectionError)."""
    kind: type[requests.exceptions.RequestException]
    message = resolving or str(error)
    if isinstance(error, RPCError):
        kind = (ResolveError if resolving else
                AmbiguousAddressError if isinstance(error, AmbiguousAddress) else DaemonRPCError)
        wrapped = kind(message, request=request)
        wrapped.code, wrapped.message, wrapped.data, wrapped.method = (  # type: ignore[attr-defined]
            error.code, error.message, error.data, error.method)
        return wrapped
    kind = (DaemonUnavailableError if isinstance(error, DaemonUnavailable) else
            DaemonTimeout if isinstance(error, CallTimeout) else DaemonProtocolError)
    if resolving and isinstance(error, ProtocolError):
        return requests.exceptions.ConnectionError(message, request=request)
    return kind(message, request=request)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())


class HTTPAdapter(requests.adapters.HTTPAdapter):
    """A transport adapter that connects IP-direct through the daemon and carries each hop's
    cookies through the daemon's jar. Mount it on any ``requests.Session`` whose own jar is
    left empty (`Session` does both).

    A URL with an IP literal connects to that address; with a ``Host`` header naming a host, TLS
    (SNI, the certificate) and the cookies are that host's. Failed daemon calls raise requests
    exceptions that are also the httpdns error (`DaemonUnavailableError`, `DaemonRPCError`, ...)."""

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
        url = request.url or ""
        host = request_host(url, request.headers.get("Host"))
        try:
            jar_header = self.httpdns.get_cookie_header(url, host)
        except HTTPDNSError as error:
            raise _requests_error(error, request) from error
        if jar_header:
            own = request.headers.get("Cookie")
            request.headers["Cookie"] = f"{jar_header}; {own}" if own else jar_header
        # The route and server name are this request's: set in a context of its own.
        context = contextvars.copy_context()
        if host is not None and url_host(url) is None:
            context.run(_server_name.set, host)
        try:
            response = context.run(super().send, request, *args, **kwargs)
        except _ResolveFailed as failed:
            raise _requests_error(failed.error, request, str(failed)) from failed.error
        set_cookie = response.raw.headers.getlist("Set-Cookie") if response.raw is not None else []
        if set_cookie:
            try:
                stored = self.httpdns.handle_set_cookie(url, set_cookie, host)
            except HTTPDNSError as error:
                response.close()
                raise _requests_error(error, request) from error
            report_rejected(url, set_cookie, stored)
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


def _with_host(headers: Any, host: str) -> requests.structures.CaseInsensitiveDict:
    merged = requests.structures.CaseInsensitiveDict(headers or {})
    merged["Host"] = host
    return merged


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

    def request(self, method: str | bytes, url: str | bytes, *args: Any, host: str | None = None,
                **kwargs: Any) -> requests.Response:
        """``requests.Session.request``, plus ``host``: the host name an IP-literal URL is for,
        the same as a ``Host`` header (connects to the address; TLS and cookies are the host's)."""
        if host is not None:
            if len(args) >= 3:  # params, data, headers
                args = (*args[:2], _with_host(args[2], host), *args[3:])
            else:
                kwargs["headers"] = _with_host(kwargs.get("headers"), host)
        return super().request(method, url, *args, **kwargs)

    def rebuild_auth(self, prepared_request: requests.PreparedRequest, response: requests.Response) -> None:
        """requests' own, and a redirect to another origin does not carry the Host header on."""
        super().rebuild_auth(prepared_request, response)
        if "Host" in prepared_request.headers and _origin(prepared_request.url or "") != _origin(
                response.request.url or ""):
            del prepared_request.headers["Host"]

    def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
        prepared = super().prepare_request(request)
        own = _RequestCookies()
        own.update(prepared._cookies)
        prepared._cookies = own
        return prepared
