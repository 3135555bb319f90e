"""`Client`: typed calls for every method of httpdnsd-rpc(7), plus a raw `call`."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import queue
import threading
import time
import urllib.parse
import weakref
from typing import Any, Iterable

from ._connection import Connection, ConnectionClosed, socket_path
from ._errors import AmbiguousAddress, CallTimeout, DaemonUnavailable, ProtocolError, RPCError
from ._types import (CacheEntry, Cookie, CookieHeader, ExportedCookies, MetricsText, ReverseLookup, Resolution,
                     Statistics, Status, StoredCookies)

DEFAULT_TIMEOUT = 30.0
_LIVE_CLIENTS: weakref.WeakSet[Client] = weakref.WeakSet()


def url_host(url: str) -> str | None:
    """The host name of ``url`` as this client parses it, or None when the URL names an IP
    literal (then the daemon's per-user address memory, or an explicit ``host``, decides)."""
    host = urllib.parse.urlsplit(url).hostname
    if not host:
        return None
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return None
    except ValueError:
        return host


class Client:
    """A connection to httpdnsd, shared by every thread that uses this object.

    ``socket`` overrides the socket rules of httpdnsd-rpc(7) (see `socket_path`); ``timeout``
    bounds each call's wait for its answer, in seconds. The connection is opened on the first
    call and opened again when the daemon has closed it (an idle timeout, a restart).
    """

    def __init__(self, socket: str | os.PathLike[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT):
        self.socket_path = socket_path(socket)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._closed = False
        _LIVE_CLIENTS.add(self)

    # -- connection ------------------------------------------------------------------------

    def _connected(self) -> Connection:
        with self._lock:
            if self._closed:
                raise DaemonUnavailable("the client is closed")
            if self._connection is None or self._connection.closed:
                self._connection = Connection(self.socket_path)
            return self._connection

    def close(self) -> None:
        """Closes the connection; calls after this raise `DaemonUnavailable`."""
        with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _after_fork(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.abandon()

    # -- raw calls -------------------------------------------------------------------------

    def _send(self, method: str, params: Any, timeout: float | None) -> tuple[Connection, int, Any]:
        connection = self._connected()
        request_id, future = connection.send(method, params, timeout)
        return connection, request_id, future

    @staticmethod
    def _result(method: str, response: dict[str, Any]) -> Any:
        error = response.get("error")
        if error is not None:
            if not isinstance(error, dict) or not isinstance(error.get("code"), int):
                raise ProtocolError(f"{method}: malformed error {error!r}")
            data = error.get("data")
            kind = AmbiguousAddress if isinstance(data, dict) and data.get("reason") == "ambiguous-address" else RPCError
            return kind(error["code"], str(error.get("message", "")), data, method)
        if "result" not in response:
            raise ProtocolError(f"{method}: a response with neither result nor error")
        return response["result"]

    def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """Calls ``method`` with ``params`` (by name) and returns its ``result`` as decoded JSON.

        Raises `RPCError` for an error answer, `DaemonUnavailable` when the daemon cannot be
        reached, `CallTimeout` when no answer comes within ``timeout`` (default: the client's).
        """
        wait = self.timeout if timeout is None else timeout
        # One deadline for the whole call: writing the request, then waiting for its answer.
        deadline = None if wait is None else time.monotonic() + wait
        for attempt in (1, 2):
            try:
                connection, request_id, future = self._send(method, params, _left(deadline))
                try:
                    response = future.result(_left(deadline))
                except TimeoutError:
                    connection.forget(request_id)
                    raise CallTimeout(f"{method}: no answer from httpdnsd within {wait} s") from None
            except ConnectionClosed as closed:
                # A connection the daemon closed while idle never saw the request: send it again once.
                if attempt == 1 and closed.written_while_idle:
                    continue
                raise
            outcome = self._result(method, response)
            if isinstance(outcome, RPCError):
                raise outcome
            return outcome
        raise AssertionError("unreachable")

    async def call_async(self, method: str, params: dict[str, Any] | None = None, *,
                         timeout: float | None = None) -> Any:
        """`call` for asyncio programs: waits for the answer without blocking the event loop.
        Under another event loop (trio), the wait runs in a worker thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            import anyio.to_thread
            return await anyio.to_thread.run_sync(lambda: self.call(method, params, timeout=timeout))
        wait = self.timeout if timeout is None else timeout
        deadline = None if wait is None else time.monotonic() + wait
        for attempt in (1, 2):
            try:
                connection, request_id, future = self._send(method, params, _left(deadline))
                try:
                    response = await asyncio.wait_for(asyncio.wrap_future(future), _left(deadline))
                except (asyncio.TimeoutError, asyncio.CancelledError) as stopped:
                    connection.forget(request_id)
                    if isinstance(stopped, asyncio.CancelledError):
                        raise
                    raise CallTimeout(f"{method}: no answer from httpdnsd within {wait} s") from None
            except ConnectionClosed as closed:
                if attempt == 1 and closed.written_while_idle:
                    continue
                raise
            outcome = self._result(method, response)
            if isinstance(outcome, RPCError):
                raise outcome
            return outcome
        raise AssertionError("unreachable")

    # -- typed calls -----------------------------------------------------------------------

    @staticmethod
    def _resolve_params(host: str, family: str | None, allow_stale: bool | None,
                        timeout_ms: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"host": host}
        if family is not None:
            params["family"] = family
        if allow_stale is not None:
            params["allowStale"] = allow_stale
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        return params

    def _resolve_wait(self, timeout_ms: int | None) -> float | None:
        return None if timeout_ms is None else max(self.timeout, timeout_ms / 1000 + 5)

    def resolve(self, host: str, *, family: str | None = None, allow_stale: bool | None = None,
                timeout_ms: int | None = None) -> Resolution:
        """``resolve``: the addresses of ``host`` (``family``: "ipv4", "ipv6" or "both")."""
        result = self.call("resolve", self._resolve_params(host, family, allow_stale, timeout_ms),
                           timeout=self._resolve_wait(timeout_ms))
        return Resolution.from_json(result)

    async def resolve_async(self, host: str, *, family: str | None = None, allow_stale: bool | None = None,
                            timeout_ms: int | None = None) -> Resolution:
        """`resolve` for asyncio programs."""
        result = await self.call_async("resolve", self._resolve_params(host, family, allow_stale, timeout_ms),
                                       timeout=self._resolve_wait(timeout_ms))
        return Resolution.from_json(result)

    def reverse(self, address: str) -> ReverseLookup:
        """``reverse``: the host names the daemon handed ``address`` out for, to this user."""
        return ReverseLookup.from_json(self.call("reverse", {"address": address}))

    def forget(self, address: str | None = None, *, all: bool = False) -> int:
        """``forget``: exactly one of ``address`` (an IP literal) and ``all=True``. Drops this
        user's own memory of that address (every name it was handed out for), or of every
        address; the cache, the jar and other users' memory stay. Returns how many addresses
        were forgotten. Raises ValueError or TypeError, before asking the daemon, unless exactly
        one is given."""
        if not isinstance(all, bool):
            raise TypeError(f"forget: all must be True or False, not {all!r}")
        if address is not None and not isinstance(address, str):
            raise TypeError(f"forget: address must be an IP literal string, not {type(address).__name__}")
        if (address is not None) == all:
            raise ValueError("forget: give exactly one of address and all=True")
        params: dict[str, Any] = {"all": True} if all else {"address": address}
        return _count(self.call("forget", params), "forgotten", "forget")

    @staticmethod
    def _cookie_params(url: str, host: str | None, **members: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"url": url}
        host = host or url_host(url)
        if host:
            params["host"] = host
        params.update({key: value for key, value in members.items() if value is not None})
        return params

    def get_cookie_header(self, url: str, host: str | None = None, *, for_script: bool | None = None,
                          site_for_cookies: str | None = None, top_level_navigation: bool | None = None) -> CookieHeader:
        """``getCookieHeader``: the Cookie header value for a request to ``url`` ("" for none).

        ``host`` names the real host when ``url`` holds an IP literal; for a URL with a host
        name it defaults to that name, so the jar never has to guess."""
        params = self._cookie_params(url, host, forScript=for_script, siteForCookies=site_for_cookies,
                                     topLevelNavigation=top_level_navigation)
        return _cookie_header(self.call("getCookieHeader", params))

    async def get_cookie_header_async(self, url: str, host: str | None = None) -> CookieHeader:
        """`get_cookie_header` for asyncio programs."""
        return _cookie_header(await self.call_async("getCookieHeader", self._cookie_params(url, host)))

    def handle_set_cookie(self, url: str, set_cookie: str | Iterable[str], host: str | None = None) -> StoredCookies:
        """``handleSetCookie``: stores a response's ``Set-Cookie`` values (one string or several)."""
        values = [set_cookie] if isinstance(set_cookie, str) else list(set_cookie)
        return StoredCookies.from_json(self.call("handleSetCookie", self._cookie_params(url, host, setCookie=values)))

    async def handle_set_cookie_async(self, url: str, set_cookie: str | Iterable[str],
                                      host: str | None = None) -> StoredCookies:
        """`handle_set_cookie` for asyncio programs."""
        values = [set_cookie] if isinstance(set_cookie, str) else list(set_cookie)
        result = await self.call_async("handleSetCookie", self._cookie_params(url, host, setCookie=values))
        return StoredCookies.from_json(result)

    def delete_cookies(self, *, url: str | None = None, host: str | None = None, domain: str | None = None,
                       all: bool = False, name: str | None = None) -> int:
        """``deleteCookies``: exactly one of ``url``, ``domain`` and ``all=True``; ``name``
        narrows it to cookies of that name. Returns how many were deleted."""
        params: dict[str, Any] = self._cookie_params(url, host) if url is not None else {}
        if domain is not None:
            params["domain"] = domain
        if all:
            params["all"] = True
        if name is not None:
            params["name"] = name
        result = self.call("deleteCookies", params)
        return _count(result, "deleted", "deleteCookies")

    def list_cookies(self, domain: str | None = None) -> list[Cookie]:
        """``listCookies``: this user's cookies (of ``domain`` and its subdomains when given)."""
        result = self.call("listCookies", {"domain": domain} if domain is not None else None)
        if not isinstance(result, dict) or not isinstance(result.get("cookies"), list):
            raise ProtocolError(f"listCookies: malformed result {result!r}")
        return [Cookie.from_json(c) for c in result["cookies"]]

    def import_cookies(self, data: str, format: str | None = None) -> int:
        """``importCookies``: adds the cookies of a Netscape cookies.txt text; returns the count."""
        params: dict[str, Any] = {"data": data}
        if format is not None:
            params["format"] = format
        return _count(self.call("importCookies", params), "imported", "importCookies")

    def export_cookies(self, format: str | None = None) -> ExportedCookies:
        """``exportCookies``: this user's jar as Netscape cookies.txt text."""
        return ExportedCookies.from_json(self.call("exportCookies", {"format": format} if format is not None else None))

    def flush_cache(self, host: str | None = None) -> int:
        """``flushCache`` (root and the daemon's user only): drops cached answers; returns how many."""
        return _count(self.call("flushCache", {"host": host} if host is not None else None), "flushed", "flushCache")

    def status(self) -> Status:
        """``status``: version, uptime, cache counters, this user's cookie count, upstreams, fleet."""
        return Status.from_json(self.call("status"))

    def show_cache(self) -> list[CacheEntry]:
        """``showCache``: the cache entries this user may see (host, family, addresses, ttl,
        stale, upstream), by host, then family."""
        result = self.call("showCache")
        if not isinstance(result, dict) or not isinstance(result.get("entries"), list):
            raise ProtocolError(f"showCache: malformed result {result!r}")
        return [CacheEntry.from_json(e) for e in result["entries"]]

    def statistics(self) -> Statistics:
        """``statistics``: every user's counters since the daemon started or the last reset."""
        return Statistics.from_json(self.call("statistics"))

    def reset_statistics(self) -> int:
        """``resetStatistics`` (root and the daemon's user only): returns the new ``since``."""
        return _count(self.call("resetStatistics"), "since", "resetStatistics")

    def metrics(self) -> MetricsText:
        """``metrics``: the Prometheus text exposition (format 0.0.4)."""
        result = self.call("metrics")
        if not isinstance(result, dict) or not isinstance(result.get("text"), str) or not isinstance(
                result.get("contentType"), str):
            raise ProtocolError(f"metrics: malformed result {result!r}")
        return MetricsText(result["text"], result["contentType"])

    def monitor(self) -> Monitor:
        """``monitor``: subscribes on a connection of its own and returns the subscription, an
        iterator of events that ends when the daemon closes the connection. Events caused after
        this returns are delivered."""
        events: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()

        def on_notification(message: dict[str, Any]) -> None:
            if message.get("method") == "monitorEvent" and isinstance(message.get("params"), dict):
                events.put(message["params"])

        connection = Connection(self.socket_path, on_notification, on_close=lambda: events.put(None))
        try:
            request_id, future = connection.send("monitor", None, self.timeout)
            try:
                response = future.result(self.timeout)
            except TimeoutError:
                raise CallTimeout(f"monitor: no answer from httpdnsd within {self.timeout} s") from None
            outcome = self._result("monitor", response)
            if isinstance(outcome, RPCError):
                raise outcome
        except BaseException:
            connection.close()
            raise
        if not isinstance(outcome, dict) or not isinstance(outcome.get("scope"), str) or isinstance(
                outcome.get("queueLimit"), bool) or not isinstance(outcome.get("queueLimit"), int):
            connection.close()
            raise ProtocolError(f"monitor: malformed result {outcome!r}")
        return Monitor(connection, events, outcome["scope"], outcome["queueLimit"])

    def discover(self) -> dict[str, Any]:
        """``rpc.discover``: the daemon's OpenRPC document."""
        result = self.call("rpc.discover")
        if not isinstance(result, dict):
            raise ProtocolError("rpc.discover: the result is not an object")
        return result


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _cookie_header(result: Any) -> CookieHeader:
    if not isinstance(result, dict) or not isinstance(result.get("header"), str) or isinstance(
            result.get("count"), bool) or not isinstance(result.get("count"), int):
        raise ProtocolError(f"getCookieHeader: malformed result {result!r}")
    return CookieHeader(result["header"], result["count"])


def _count(result: Any, key: str, method: str) -> int:
    value = result.get(key) if isinstance(result, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{method}: malformed result {result!r}")
    return value


class Monitor:
    """The events of one ``monitor`` subscription: an iterator of the ``params`` of each
    monitorEvent notification (time, type, uid, ...), over a connection of its own. `close`
    (or leaving a ``with`` block, or the object being collected) ends the subscription."""

    scope: str
    queue_limit: int

    def __init__(self, connection: Connection, events: queue.SimpleQueue[dict[str, Any] | None], scope: str = "own",
                 queue_limit: int = 0):
        self._connection = connection
        self._events = events
        self.scope = scope  # all: every user's events (root, the daemon's user); own: the caller's
        self.queue_limit = queue_limit  # events that may wait for this subscriber before it is dropped

    def __iter__(self) -> Monitor:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._connection.closed and self._events.empty():
            raise StopIteration
        event = self._events.get()
        if event is None:
            raise StopIteration
        return event

    def next(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next event, or None when none comes within ``timeout`` seconds or the
        subscription has ended."""
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        """Closes the subscription's connection."""
        self._connection.close()

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def _forget_connections_in_child() -> None:
    for client in list(_LIVE_CLIENTS):
        client._after_fork()


os.register_at_fork(after_in_child=_forget_connections_in_child)
