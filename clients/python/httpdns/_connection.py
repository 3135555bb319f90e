"""One connection to the daemon: newline-delimited JSON-RPC 2.0 over a Unix stream socket.

Requests may be pipelined from any number of threads; a reader thread routes each response to
its caller by id (the daemon may answer out of order) and each notification (a message with a
``method`` and no ``id``) to the connection's notification handler, which is what a streaming
method needs: its first answer comes as a response, what follows as notifications.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import os
import select
import socket
import threading
import time
from typing import Any, Callable

from ._errors import CallTimeout, DaemonUnavailable, ProtocolError

SYSTEM_SOCKET = "/run/httpdnsd/httpdnsd.sock"
# Bounds what one answer line may make the reader hold (an exported jar is the largest answer).
MAX_LINE = 256 * 1024 * 1024


def socket_path(explicit: str | os.PathLike[str] | None = None) -> str:
    """The socket httpdnsd-rpc(7) says to use: ``explicit``, else ``$HTTPDNSD_SOCKET``, else the
    per-user socket when ``$XDG_RUNTIME_DIR`` is set and it exists, else the system socket."""
    if explicit:
        return os.fspath(explicit)
    from_environment = os.environ.get("HTTPDNSD_SOCKET")
    if from_environment:
        return from_environment
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        per_user = os.path.join(runtime, "httpdnsd", "httpdnsd.sock")
        if os.path.exists(per_user):
            return per_user
    return SYSTEM_SOCKET


class ConnectionClosed(DaemonUnavailable):
    """The connection closed while a request on it was unanswered."""

    def __init__(self, message: str, *, written_while_idle: bool = False):
        super().__init__(message)
        # True when the request went out on a connection that had answered before and had
        # nothing else in flight: the daemon closes only idle connections without answering
        # (IdleTimeout=), so it never read such a request, and sending it again is safe.
        self.written_while_idle = written_while_idle


class Connection:
    """A connected socket with its reader thread. Thread-safe."""

    def __init__(self, path: str, on_notification: Callable[[dict[str, Any]], None] | None = None,
                 connect_timeout: float | None = 10.0, on_close: Callable[[], None] | None = None):
        self.path = path
        self._on_notification = on_notification
        # Called once by the reader thread after the connection has closed (after every
        # notification it delivered), so a stream of notifications can end.
        self._on_close = on_close
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(connect_timeout)
            sock.connect(path)
            sock.settimeout(None)
        except OSError as error:
            sock.close()
            raise DaemonUnavailable(f"cannot connect to httpdnsd at {path}: {error.strerror or error}") from error
        self._socket = sock
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # pending, closed
        self._write_lock = threading.Lock()
        self._pending: dict[int, tuple[concurrent.futures.Future, bool]] = {}
        self._closed: DaemonUnavailable | None = None
        # The last error answered with id null (a line too large, a line timeout): the reason a
        # close that follows it gives to the requests it leaves unanswered.
        self._orphan_error: dict[str, Any] | None = None
        self.answers = 0
        self._reader = threading.Thread(target=self._read, name="httpdns-reader", daemon=True)
        self._reader.start()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def send(self, method: str, params: Any = None,
             timeout: float | None = None) -> tuple[int, concurrent.futures.Future]:
        """Writes one request within ``timeout`` seconds (else the connection is closed, as a
        partly written line leaves it unusable, and `CallTimeout` is raised); the future
        completes with the whole response object."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed is not None:
                raise ConnectionClosed(str(self._closed), written_while_idle=True)
            request_id = next(self._ids)
            # Retryable if the daemon closes without answering: see ConnectionClosed.
            self._pending[request_id] = (future, not self._pending and self.answers > 0)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._write_lock.acquire(timeout=-1 if timeout is None else timeout):
            self.forget(request_id)
            raise CallTimeout(f"{method}: the connection to httpdnsd stayed busy for {timeout} s")
        try:
            self._write(line, deadline)
        except TimeoutError:
            self.forget(request_id)
            self.close()
            raise CallTimeout(f"{method}: httpdnsd did not read the request within {timeout} s") from None
        except OSError as error:
            self._close(ConnectionClosed(f"httpdnsd at {self.path} closed the connection: {error}"))
        finally:
            self._write_lock.release()
        return request_id, future

    def _write(self, data: bytes, deadline: float | None) -> None:
        """sendall with a deadline: the socket stays blocking for the reader thread, so each
        write is non-blocking on its own (MSG_DONTWAIT) after a wait for room."""
        view = memoryview(data)
        poller = select.poll()
        poller.register(self._socket, select.POLLOUT)
        while view:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError
            if not poller.poll(None if remaining is None else max(1, int(remaining * 1000))):
                continue
            try:
                view = view[self._socket.send(view, socket.MSG_DONTWAIT):]
            except BlockingIOError:
                continue

    def forget(self, request_id: int) -> None:
        """Drops a request whose caller stopped waiting; its late answer is discarded."""
        with self._lock:
            self._pending.pop(request_id, None)

    def close(self) -> None:
        """Closes the socket; unanswered requests fail with `DaemonUnavailable`."""
        self._close(ConnectionClosed("the client closed the connection"))
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def abandon(self) -> None:
        """In a forked child: forgets the parent's connection without touching the socket's
        other end (the parent still uses it)."""
        with self._lock:
            self._closed = ConnectionClosed("inherited across fork")
            self._pending.clear()
        self._socket.close()

    def _close(self, reason: DaemonUnavailable) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = reason
            pending = list(self._pending.values())
            self._pending.clear()
        for future, idle in pending:
            if not future.done():
                error = ConnectionClosed(str(reason), written_while_idle=idle and self._orphan_error is None)
                future.set_exception(error)

    def _read(self) -> None:
        reason: DaemonUnavailable = ConnectionClosed(f"httpdnsd at {self.path} closed the connection")
        try:
            stream = self._socket.makefile("rb", buffering=65536)
            while True:
                line = stream.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE:
                    reason = ConnectionClosed(f"an answer longer than {MAX_LINE} bytes")
                    break
                if not line.strip():
                    continue
                self._dispatch(line)
        except OSError as error:
            reason = ConnectionClosed(f"reading from httpdnsd at {self.path}: {error}")
        except ProtocolError as error:
            reason = ConnectionClosed(str(error))
        if self._orphan_error is not None:
            error = self._orphan_error
            reason = ConnectionClosed(
                f"httpdnsd closed the connection after error {error.get('code')}: {error.get('message')}")
        self._close(reason)
        try:
            self._socket.close()
        except OSError:
            pass
        if self._on_close is not None:
            self._on_close()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as error:
            raise ProtocolError(f"the daemon sent a line that is not JSON: {error}") from None
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                raise ProtocolError(f"the daemon sent {type(item).__name__}, not a JSON-RPC object")
            if "id" not in item and isinstance(item.get("method"), str):
                if self._on_notification is not None:
                    self._on_notification(item)
                continue
            request_id = item.get("id")
            if request_id is None:
                self._orphan_error = item.get("error") if isinstance(item.get("error"), dict) else {}
                continue
            with self._lock:
                entry = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
                self.answers += 1
            if entry is not None and not entry[0].done():
                entry[0].set_result(item)
