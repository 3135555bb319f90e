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
"""

from __future__ import annotations

import collections
import http.cookiejar
import threading
from typing import Any

import httpcore
import httpx

from ._client import Client as DaemonClient
from ._client import url_host
from ._errors import HTTPDNSError

__all__ = ["AsyncClient", "AsyncCookieTransport", "AsyncHTTPTransport", "Client", "CookieTransport",
           "HTTPTransport"]

# Distinct address sets whose connection pools are kept; the least recently used goes first.
MAX_ADDRESS_SETS = 32
_CONNECT_FAILURES = (httpcore.ConnectError, httpcore.ConnectTimeout)


class _Addresses:
    """httpcore's network backend, connecting to fixed addresses in turn instead of the host."""

    def __init__(self, inner: Any, addresses: tuple[str, ...]):
        self._inner = inner
        self._addresses = addresses

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    **kwargs: Any) -> Any:
        failure: Exception | None = None
        for address in self._addresses:
            try:
                return self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address, **kwargs)
            except _CONNECT_FAILURES as error:
                failure = error
        raise failure if failure is not None else httpcore.ConnectError(f"no address for {host}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AsyncAddresses(_Addresses):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # type: ignore[override]
                          local_address: str | None = None, **kwargs: Any) -> Any:
        failure: Exception | None = None
        for address in self._addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                     **kwargs)
            except _CONNECT_FAILURES as error:
                failure = error
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


def _resolve_failed(request: httpx.Request, error: HTTPDNSError) -> httpx.ConnectError:
    return httpx.ConnectError(f"httpdnsd could not resolve {request.url.host}: {error}", request=request)


class HTTPTransport(httpx.BaseTransport):
    """IP-direct: the daemon's addresses for each request's host. Takes httpx.HTTPTransport's
    options (``verify``, ``cert``, ``http2``, ``limits``, ``retries``, ...) except ``proxy``."""

    def __init__(self, daemon: DaemonClient | None = None, *, verify: Any = True, cert: Any = None,
                 trust_env: bool = True, **options: Any):
        self.httpdns = daemon if daemon is not None else DaemonClient()
        self._pools = _Pools(httpx.HTTPTransport, _Addresses, verify, cert, trust_env, options)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            addresses = tuple(self.httpdns.resolve(request.url.host).addresses)
        except HTTPDNSError as error:
            raise _resolve_failed(request, error) from error
        return self._pools.get(addresses).handle_request(request)

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
        try:
            addresses = tuple((await self.httpdns.resolve_async(request.url.host)).addresses)
        except HTTPDNSError as error:
            raise _resolve_failed(request, error) from error
        return await self._pools.get(addresses).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self._pools.all():
            await transport.aclose()


def _with_jar_header(request: httpx.Request, header: str) -> None:
    if header:
        own = request.headers.get("Cookie")
        request.headers["Cookie"] = f"{header}; {own}" if own else header


class CookieTransport(httpx.BaseTransport):
    """Wraps any transport: the daemon's Cookie header on each request, its Set-Cookie values
    stored through the daemon for the request's URL."""

    def __init__(self, inner: httpx.BaseTransport, daemon: DaemonClient):
        self.inner = inner
        self.httpdns = daemon

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        host = url_host(url)
        _with_jar_header(request, self.httpdns.get_cookie_header(url, host))
        response = self.inner.handle_request(request)
        set_cookie = response.headers.get_list("Set-Cookie")
        if set_cookie:
            self.httpdns.handle_set_cookie(url, set_cookie, host)
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
        host = url_host(url)
        _with_jar_header(request, await self.httpdns.get_cookie_header_async(url, host))
        response = await self.inner.handle_async_request(request)
        set_cookie = response.headers.get_list("Set-Cookie")
        if set_cookie:
            await self.httpdns.handle_set_cookie_async(url, set_cookie, host)
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


class Client(httpx.Client):
    """An ``httpx.Client`` on the machine's shared session (same arguments, plus ``daemon``, a
    `httpdns.Client`, or ``socket``); ``client.httpdns`` is the daemon's client."""

    def __init__(self, *, daemon: DaemonClient | None = None, socket: str | None = None, **kwargs: Any):
        self.httpdns = _setup(kwargs, daemon, socket)
        if kwargs.get("transport") is None:
            options = {key: kwargs[key] for key in _TRANSPORT_OPTIONS if key in kwargs}
            kwargs["transport"] = HTTPTransport(self.httpdns, **options)
        super().__init__(**kwargs)
        self._transport = CookieTransport(self._transport, self.httpdns)
        self._mounts = {pattern: CookieTransport(transport, self.httpdns) if transport is not None else None
                        for pattern, transport in self._mounts.items()}


class AsyncClient(httpx.AsyncClient):
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
