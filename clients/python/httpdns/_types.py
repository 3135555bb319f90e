"""Typed results of the daemon's methods (httpdnsd-rpc(7)), with Python names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._errors import ProtocolError


def _get(obj: Any, key: str, kind: type | tuple[type, ...], method: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ProtocolError(f"{method}: the result has no {key!r}")
    value = obj[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise ProtocolError(f"{method}: {key!r} is {type(value).__name__}, not {kind}")
    return value


@dataclass(frozen=True)
class Resolution:
    """A ``resolve`` answer. ``source`` is cache, upstream, system, literal, static or fleet."""

    host: str
    ipv4: list[str]
    ipv6: list[str]
    ttl: int
    stale: bool
    source: str
    upstream: str | None = None

    @property
    def addresses(self) -> list[str]:
        """Every address, IPv4 first (the order connections are tried in)."""
        return self.ipv4 + self.ipv6

    @classmethod
    def from_json(cls, result: Any) -> Resolution:
        m = "resolve"
        return cls(_get(result, "host", str, m), list(_get(result, "ipv4", list, m)),
                   list(_get(result, "ipv6", list, m)), _get(result, "ttl", int, m), _get(result, "stale", bool, m),
                   _get(result, "source", str, m), result.get("upstream"))


@dataclass(frozen=True)
class ReverseLookup:
    """A ``reverse`` answer: the host names handed out for ``address`` to this user."""

    address: str
    hosts: list[str]
    ttl: int

    @classmethod
    def from_json(cls, result: Any) -> ReverseLookup:
        m = "reverse"
        return cls(_get(result, "address", str, m), list(_get(result, "hosts", list, m)), _get(result, "ttl", int, m))


@dataclass(frozen=True)
class Rejection:
    """One refused Set-Cookie value: its position and why (syntax, domain-mismatch, ...)."""

    index: int
    reason: str


@dataclass(frozen=True)
class StoredCookies:
    """A ``handleSetCookie`` answer."""

    host: str
    stored: int
    rejected: list[Rejection] = field(default_factory=list)

    @classmethod
    def from_json(cls, result: Any) -> StoredCookies:
        m = "handleSetCookie"
        rejected = [Rejection(_get(r, "index", int, m), _get(r, "reason", str, m))
                    for r in _get(result, "rejected", list, m)]
        return cls(_get(result, "host", str, m), _get(result, "stored", int, m), rejected)


@dataclass(frozen=True)
class Cookie:
    """One cookie of the jar, as ``listCookies`` gives it (``expires`` None: a session cookie)."""

    name: str
    value: str
    domain: str
    host_only: bool
    path: str
    expires: int | None
    secure: bool
    http_only: bool
    same_site: str
    partitioned: bool
    created: int

    @classmethod
    def from_json(cls, c: Any) -> Cookie:
        m = "listCookies"
        expires = c.get("expires") if isinstance(c, dict) else None
        if expires is not None and (isinstance(expires, bool) or not isinstance(expires, int)):
            raise ProtocolError(f"{m}: 'expires' is {type(expires).__name__}")
        return cls(_get(c, "name", str, m), _get(c, "value", str, m), _get(c, "domain", str, m),
                   _get(c, "hostOnly", bool, m), _get(c, "path", str, m), expires, _get(c, "secure", bool, m),
                   _get(c, "httpOnly", bool, m), _get(c, "sameSite", str, m), bool(c.get("partitioned", False)),
                   _get(c, "created", int, m))


@dataclass(frozen=True)
class UpstreamStatus:
    """One configured upstream in ``status``."""

    name: str
    kind: str
    healthy: bool
    last_error: str | None
    latency_ms: float | None


@dataclass(frozen=True)
class Status:
    """A ``status`` answer. ``cache`` and ``fleet`` are the objects as sent (camelCase keys);
    ``raw`` is the whole result, members a newer daemon adds included."""

    version: str
    uptime: float
    cache: dict[str, Any]
    cookie_count: int
    upstreams: list[UpstreamStatus]
    fleet: dict[str, Any] | None
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, result: Any) -> Status:
        m = "status"
        upstreams = [UpstreamStatus(_get(u, "name", str, m), _get(u, "kind", str, m), _get(u, "healthy", bool, m),
                                    u.get("lastError"), u.get("latencyMs"))
                     for u in _get(result, "upstreams", list, m)]
        return cls(_get(result, "version", str, m), float(_get(result, "uptime", (int, float), m)),
                   dict(_get(result, "cache", dict, m)), _get(_get(result, "cookies", dict, m), "count", int, m),
                   upstreams, result.get("fleet"), dict(result))
