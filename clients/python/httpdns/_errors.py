"""The errors of the client: the daemon's JSON-RPC errors and the socket's failures."""

from __future__ import annotations

from typing import Any


class HTTPDNSError(Exception):
    """Base class of every error this package raises."""


class RPCError(HTTPDNSError):
    """The daemon answered with a JSON-RPC error.

    ``code`` is the JSON-RPC code (-32602, -32001, ...), ``message`` the daemon's sentence and
    ``data`` the error's ``data`` object as sent (``data["name"]`` is the stable name scripts
    match: ``InvalidParams``, ``HostNotFound``, ...; other members such as ``field``, ``reason``,
    ``candidates`` or ``limit`` are carried through whatever they are).
    """

    def __init__(self, code: int, message: str, data: Any = None, method: str | None = None):
        self.code = code
        self.message = message
        self.data = data if data is not None else {}
        self.method = method
        super().__init__(self._describe())

    def _member(self, key: str) -> Any:
        return self.data.get(key) if isinstance(self.data, dict) else None

    @property
    def name(self) -> str | None:
        """``data.name``: ``InvalidParams``, ``HostNotFound``, ``LimitExceeded``, ..."""
        return self._member("name")

    @property
    def field(self) -> str | None:
        """``data.field``: the parameter an ``InvalidParams`` error is about."""
        return self._member("field")

    @property
    def reason(self) -> str | None:
        """``data.reason``: ``ambiguous-address``, ``ambiguous-url``, an upstream's failure, ..."""
        return self._member("reason")

    @property
    def candidates(self) -> list[str]:
        """``data.candidates``: the host names of an ``ambiguous-address`` refusal."""
        return list(self._member("candidates") or [])

    def _describe(self) -> str:
        text = f"{self.method + ': ' if self.method else ''}{self.message} ({self.code}"
        if self.name:
            text += f" {self.name}"
        details = [f"{key}={value!r}" for key, value in self.data.items() if key != "name"] if isinstance(
            self.data, dict) else []
        return text + (": " + ", ".join(details) if details else "") + ")"


class AmbiguousAddress(RPCError):
    """A cookie call for an IP-literal URL without a host name, whose address this user's
    answers map to several host names (``candidates``): the call is repeated with one of them as
    ``host`` (for the HTTP adapters, a ``Host`` header)."""

    @property
    def address(self) -> str | None:
        """``data.address``: the address the candidates share."""
        return self._member("address")

    def _describe(self) -> str:
        return (f"{self.method + ': ' if self.method else ''}{self.address or 'the address'} is an address of "
                f"several host names ({', '.join(self.candidates)}): name the host with a Host header or host= "
                f"({self.code} {self.name or 'InvalidParams'}: ambiguous-address)")


class DaemonUnavailable(HTTPDNSError, ConnectionError):
    """The daemon's socket could not be reached, or it closed the connection before answering."""


class ProtocolError(HTTPDNSError):
    """The daemon's answer is not what httpdnsd-rpc(7) says it is."""


class CallTimeout(HTTPDNSError, TimeoutError):
    """No answer came within the call's timeout."""
