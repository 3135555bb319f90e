"""``httpx`` over httpdnsd: IP-direct connections and the machine's shared cookie jar.

    import httpdns.httpx
    with httpdns.httpx.Client() as client:
        client.post("https://login.example.com/login", data={"user": "alice"}, follow_redirects=True)
    async with httpdns.httpx.AsyncClient() as client:
        await client.get("https://app.example.com/api/me")

`HTTPTransport` / `AsyncHTTPTransport` resolve each request's host through the daemon and
connect to its addresses in turn (the next one when a connection fails); the URL, the Host
header, TLS SNI and the certificate check keep the host name. Connections are pooled per host
and addresses (one httpx transport per set of addresses), so a host whose answer changed gets
new connections. `Client` / `AsyncClient` add, on every hop (redirects are followed by httpx
with its own rules for the method), the daemon's Cookie header for the hop's URL and store the
hop's Set-Cookie values through the daemon for that URL; the client's own cookie store stays
empty. A proxy (``proxies=``/``proxy=``/``mounts=``, or the environment with ``trust_env``)
is httpx's own transport, without IP-direct connections, and still uses the daemon's jar.

An IP-literal URL with a ``Host`` header (or ``host=``) is that host at that address:
``client.post("https://203.0.113.10/login", host="app.example.com")`` (the same as
``headers={"Host": "app.example.com"}``)
connects to 203.0.113.10 with SNI, the certificate check and the cookies for app.example.com
(httpx itself sets a redirect's Host header to the redirect's own host). Without a host name,
an address this user's answers give for several hosts raises `AmbiguousAddressError` (naming
them) before anything is sent. When every address of a stale answer fails to connect, the
daemon is asked once for a fresh answer, which is tried next. Cookies the daemon refuses are
logged (logger ``httpdns``, WARNING); failed daemon calls raise httpx.TransportError
subclasses that are also the httpdns error (httpx.ConnectError for a daemon that cannot be
reached).
"""

from __future__ import annotations

import collections
import http.cookiejar
import threading
from typing import Any

import httpcore
import httpx

from ._adapters import Route, current_route, header_host, is_ip_literal, report_rejected, request_host
from ._client import Client as DaemonClient
from ._errors import AmbiguousAddress, CallTimeout, DaemonUnavailable, HTTPDNSError, ProtocolError, RPCError

__all__ = ["AmbiguousAddressError", "AsyncClient", "AsyncCookieTransport", "AsyncHTTPTransport", "Client",
           "CookieTransport", "DaemonProtocolError", "DaemonRPCError", "DaemonTimeout", "DaemonUnavailableError",
           "HTTPTransport", "ResolveError"]

# Distinct address sets whose connection pools are kept; the least recently used goes first.
MAX_ADDRESS_SETS = 32
_CONNECT_FAILURES = (httpcore.ConnectError, httpcore.ConnectTimeout)


class _Addresses:
    """httpcore's network backend, connecting to fixed addresses in turn instead of the host;
    when every address of a stale answer fails, to the daemon's fresh answer next."""

    def __init__(self, inner: Any, addresses: tuple[str, ...]):
        self._inner = inner
        self._addresses = addresses

    @staticmethod
    def _stale_route(host: str) -> Route | None:
        route = current_route.get()
        return route if route is not None and route.stale and route.host == host else None

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    **kwargs: Any) -> Any:
        failure: Exception | None = None
        addresses = self._addresses
        route = self._stale_route(host)
        for attempt in (1, 2):
            for address in addresses:
                try:
                    return self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                   **kwargs)
                except _CONNECT_FAILURES as error:
                    failure = error
            if attempt == 1 and route is not None and route.refresh is not None:
                addresses = _fresh(host, route.refresh)
            else:
                break
        raise failure if failure is not None else httpcore.ConnectError(f"no address for {host}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _fresh(host: str, refresh: Any) -> tuple[str, ...]:
    try:
        return tuple(refresh())
    except HTTPDNSError as error:
        raise httpcore.ConnectError(f"httpdnsd could not resolve {host}: {error}") from error


class _AsyncAddresses(_Addresses):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # type: ignore[override]
                          local_address: str | None = None, **kwargs: Any) -> Any:
        failure: Exception | None = None
        addresses = self._addresses
        route = self._stale_route(host)
        for attempt in (1, 2):
            for address in addresses:
                try:
                    return await self._inner.connect_tcp(address, port, timeout=timeout,
                                                         local_address=local_address, **kwargs)
                except _CONNECT_FAILURES as error:
                    failure = error
            if attempt == 1 and route is not None and route.refresh is not None:
                try:
                    addresses = tuple(await route.refresh())
                except HTTPDNSError as error:
                    raise httpcore.ConnectError(f"httpdnsd could not resolve {host}: {error}") from error
            else:
                break
        raise failure if failure is not None else httpcore.ConnectError(f"no address for {host}")


class _Pools:
    """One httpx transport per set of addresses, built alike, with its backend pinned to them."""

    def __init__(self, factory: Any, backend: type[_Addresses], verify: Any, cert: Any, trust_env: bool,
                 options: dict[str, Any]):
        self._factory = factory
        self._backend = backend
        # One TLS context for every pool: loading the CA bundle once.
        self._options = dict(options, verify=httpx.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env))
        self._transports: collections.OrderedDict[tuple[str, ...], Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, addresses: tuple[str, ...]) -> Any:
        with self._lock:
            transport = self._transports.get(addresses)
            if transport is not None:
                self._transports.move_to_end(addresses)
                return transport
            transport = self._factory(**self._options)
            pool = transport._pool  # httpcore's pool: its network backend is what connects
            pool._network_backend = self._backend(pool._network_backend, addresses)
            self._transports[addresses] = transport
            while len(self._transports) > MAX_ADDRESS_SETS:
                self._transports.popitem(last=False)  # dropped, not closed: a request may still use it
            return transport

    def all(self) -> list[Any]:
        with self._lock:
            transports = list(self._transports.values())
            self._transports.clear()
        return transports


class DaemonUnavailableError(httpx.ConnectError, DaemonUnavailable):
    """The daemon could not be reached for a request's cookies or addresses (``__cause__`` is
    the `httpdns.DaemonUnavailable`)."""


class DaemonTimeout(httpx.ConnectError, CallTimeout):
    """The daemon did not answer a request's cookie or address call in time."""


class _RPCErrorBase(RPCError):
    """RPCError under an httpx exception, whose __init__ hands it only the message (the daemon's
    code, data and method are copied in after)."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)


class DaemonRPCError(httpx.TransportError, _RPCErrorBase):
    """The daemon refused a request's cookie call (an `httpdns.RPCError` too, with its code,
    name and data)."""


class AmbiguousAddressError(DaemonRPCError, AmbiguousAddress):
    """An IP-literal URL without a Host header whose address names several hosts
    (``candidates``); raised before the request is sent."""


class ResolveError(httpx.ConnectError, _RPCErrorBase):
    """The daemon had no address for the request's host (HostNotFound, ...)."""


class DaemonProtocolError(httpx.TransportError, ProtocolError):
    """The daemon's answer to a request's call was malformed."""


def _httpx_error(error: HTTPDNSError, request: httpx.Request, resolving: bool = False) -> httpx.TransportError:
    """``error`` as an httpx.TransportError that is also an error of its httpdns class."""
    message = f"httpdnsd could not resolve {request.url.host}: {error}" if resolving else str(error)
    if isinstance(error, RPCError):
        kind: type[httpx.TransportError] = (
            ResolveError if resolving else AmbiguousAddressError if isinstance(error, AmbiguousAddress) else
            DaemonRPCError)
        wrapped = kind(message, request=request)
        wrapped.code, wrapped.message, wrapped.data, wrapped.method = (  # type: ignore[attr-defined]
            error.code, error.message, error.data, error.method)
        return wrapped
    if isinstance(error, DaemonUnavailable):
        return DaemonUnavailableError(message, request=request)
    if isinstance(error, CallTimeout):
        return DaemonTimeout(message, request=request)
    return (httpx.ConnectError if resolving else DaemonProtocolError)(message, request=request)


def _route(request: httpx.Request) -> tuple[httpx.Request, str | None]:
    """The request to hand the pools (for an IP-literal URL with a Host header naming a host: its
    URL with that name, so that SNI and the certificate check are the name's), and the address
    to connect to when the URL names one."""
    host = request.url.host
    if not is_ip_literal(host):
        return request, None
    name = header_host(request.headers.get("Host"))
    if name is None:
        return request, host.strip("[]")
    renamed = httpx.Request(request.method, request.url.copy_with(host=name), headers=request.headers,
                            stream=request.stream, extensions=request.extensions)
    return renamed, host.strip("[]")


class HTTPTransport(httpx.BaseTransport):
    """IP-direct: the daemon's addresses for each request's host. Takes httpx.HTTPTransport's
    options (``verify``, ``cert``, ``http2``, ``limits``, ``retries``, ...) except ``proxy``.
    An IP-literal URL connects to that address, with TLS for the host its Host header names."""

    def __init__(self, daemon: DaemonClient | None = None, *, verify: Any = True, cert: Any = None,
                 trust_env: bool = True, **options: Any):
        self.httpdns = daemon if daemon is not None else DaemonClient()
        self._pools = _Pools(httpx.HTTPTransport, _Addresses, verify, cert, trust_env, options)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent, address = _route(request)
        route = None
        if address is not None:
            addresses: tuple[str, ...] = (address,)
        else:
            host = request.url.host
            try:
                resolution = self.httpdns.resolve(host)
            except HTTPDNSError as error:
                raise _httpx_error(error, request, resolving=True) from error
            addresses = tuple(resolution.addresses)
            route = Route(host, resolution.stale, lambda: self.httpdns.resolve(host, allow_stale=False).addresses)
        token = current_route.set(route)
        try:
            return self._pools.get(addresses).handle_request(sent)
        finally:
            current_route.reset(token)

    def close(self) -> None:
        for transport in self._pools.all():
            transport.close()


class AsyncHTTPTransport(httpx.AsyncBaseTransport):
    """`HTTPTransport` for ``httpx.AsyncClient``."""

    def __init__(self, daemon: DaemonClient | None = None, *, verify: Any = True, cert: Any = None,
                 trust_env: bool = True, **options: Any):
        self.httpdns = daemon if daemon is not None else DaemonClient()
        self._pools = _Pools(httpx.AsyncHTTPTransport, _AsyncAddresses, verify, cert, trust_env, options)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent, address = _route(request)
        route = None
        if address is not None:
            addresses: tuple[str, ...] = (address,)
        else:
            host = request.url.host
            try:
                resolution = await self.httpdns.resolve_async(host)
            except HTTPDNSError as error:
                raise _httpx_error(error, request, resolving=True) from error
            addresses = tuple(resolution.addresses)

            async def refresh() -> list[str]:
                return (await self.httpdns.resolve_async(host, allow_stale=False)).addresses

            route = Route(host, resolution.stale, refresh)
        token = current_route.set(route)
        try:
            return await self._pools.get(addresses).handle_async_request(sent)
        finally:
            current_route.reset(token)

    async def aclose(self) -> None:
        for transport in self._pools.all():
            await transport.aclose()


def _with_jar_header(request: httpx.Request, header: str) -> None:
    if header:
        own = request.headers.get("Cookie")
        request.headers["Cookie"] = f"{header}; {own}" if own else header


class CookieTransport(httpx.BaseTransport):
    """Wraps any transport: the daemon's Cookie header on each request, its Set-Cookie values
    stored through the daemon for the request's URL (for an IP-literal URL, under the host its
    Host header names). Refused cookies are logged (logger ``httpdns``); a failed daemon call
    raises an httpx.TransportError that is also the httpdns error."""

    def __init__(self, inner: httpx.BaseTransport, daemon: DaemonClient):
        self.inner = inner
        self.httpdns = daemon

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        host = request_host(url, request.headers.get("Host"))
        try:
            _with_jar_header(request, self.httpdns.get_cookie_header(url, host))
        except HTTPDNSError as error:
            raise _httpx_error(error, request) from error
        response = self.inner.handle_request(request)
        set_cookie = response.headers.get_list("Set-Cookie")
        if set_cookie:
            try:
                stored = self.httpdns.handle_set_cookie(url, set_cookie, host)
            except HTTPDNSError as error:
                response.close()
                raise _httpx_error(error, request) from error
            report_rejected(url, set_cookie, stored)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncCookieTransport(httpx.AsyncBaseTransport):
    """`CookieTransport` for ``httpx.AsyncClient``."""

    def __init__(self, inner: httpx.AsyncBaseTransport, daemon: DaemonClient):
        self.inner = inner
        self.httpdns = daemon

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        host = request_host(url, request.headers.get("Host"))
        try:
            _with_jar_header(request, await self.httpdns.get_cookie_header_async(url, host))
        except HTTPDNSError as error:
            raise _httpx_error(error, request) from error
        response = await self.inner.handle_async_request(request)
        set_cookie = response.headers.get_list("Set-Cookie")
        if set_cookie:
            try:
                stored = await self.httpdns.handle_set_cookie_async(url, set_cookie, host)
            except HTTPDNSError as error:
                await response.aclose()
                raise _httpx_error(error, request) from error
            report_rejected(url, set_cookie, stored)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _NoCookies(http.cookiejar.CookieJar):
    """The client's own cookie store: holds nothing, so every cookie goes through the daemon."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        raise TypeError("httpdns.httpx clients keep no cookies: the daemon's jar holds them "
                        "(use client.httpdns.handle_set_cookie)")

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass  # the cookie transport stored them through the daemon


_TRANSPORT_OPTIONS = ("http1", "http2", "limits", "verify", "cert", "trust_env")


def _setup(kwargs: dict[str, Any], daemon: DaemonClient | None, socket: str | None) -> DaemonClient:
    if "cookies" in kwargs:
        raise TypeError("the daemon's jar holds the cookies: store them with client.httpdns.handle_set_cookie")
    kwargs["cookies"] = _NoCookies()
    return daemon if daemon is not None else DaemonClient(socket)


def _with_host(headers: Any, host: str) -> httpx.Headers:
    merged = httpx.Headers(headers)
    merged["Host"] = host
    return merged


class _HostKeyword:
    """``host``: the host name an IP-literal URL is for, the same as a ``Host`` header (connects
    to the address; TLS and cookies are the host's), as ``httpdns.requests.Session`` takes it."""

    def build_request(self, method: str, url: Any, *, host: str | None = None, **kwargs: Any) -> httpx.Request:
        if host is not None:
            kwargs["headers"] = _with_host(kwargs.get("headers"), host)
        return super().build_request(method, url, **kwargs)  # type: ignore[misc]

    def request(self, method: str, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        if host is not None:
            kwargs["headers"] = _with_host(kwargs.get("headers"), host)
        return super().request(method, url, **kwargs)  # type: ignore[misc]

    def stream(self, method: str, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        if host is not None:
            kwargs["headers"] = _with_host(kwargs.get("headers"), host)
        return super().stream(method, url, **kwargs)  # type: ignore[misc]

    def get(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("GET", url, host=host, **kwargs)

    def options(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("OPTIONS", url, host=host, **kwargs)

    def head(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("HEAD", url, host=host, **kwargs)

    def post(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("POST", url, host=host, **kwargs)

    def put(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("PUT", url, host=host, **kwargs)

    def patch(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("PATCH", url, host=host, **kwargs)

    def delete(self, url: Any, *, host: str | None = None, **kwargs: Any) -> Any:
        return self.request("DELETE", url, host=host, **kwargs)


class Client(_HostKeyword, httpx.Client):
    """An ``httpx.Client`` on the machine's shared session (same arguments, plus ``daemon``, a
    `httpdns.Client`, or ``socket``); ``client.httpdns`` is the daemon's client. Each request
    method also takes ``host=``, the host name an IP-literal URL is for (see `_HostKeyword`)."""

    def __init__(self, *, daemon: DaemonClient | None = None, socket: str | None = None, **kwargs: Any):
        self.httpdns = _setup(kwargs, daemon, socket)
        if kwargs.get("transport") is None:
            options = {key: kwargs[key] for key in _TRANSPORT_OPTIONS if key in kwargs}
            kwargs["transport"] = HTTPTransport(self.httpdns, **options)
        super().__init__(**kwargs)
        self._transport = CookieTransport(self._transport, self.httpdns)
        self._mounts = {pattern: CookieTransport(transport, self.httpdns) if transport is not None else None
                        for pattern, transport in self._mounts.items()}


class AsyncClient(_HostKeyword, httpx.AsyncClient):
    """An ``httpx.AsyncClient`` on the machine's shared session (see `Client`)."""

    def __init__(self, *, daemon: DaemonClient | None = None, socket: str | None = None, **kwargs: Any):
        self.httpdns = _setup(kwargs, daemon, socket)
        if kwargs.get("transport") is None:
            options = {key: kwargs[key] for key in _TRANSPORT_OPTIONS if key in kwargs}
            kwargs["transport"] = AsyncHTTPTransport(self.httpdns, **options)
        super().__init__(**kwargs)
        self._transport = AsyncCookieTransport(self._transport, self.httpdns)
        self._mounts = {pattern: AsyncCookieTransport(transport, self.httpdns) if transport is not None else None
                        for pattern, transport in self._mounts.items()}
