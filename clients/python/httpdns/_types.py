"""Typed results of the daemon's methods (httpdnsd-rpc(7)), with Python names."""

from __future__ import annotations

import dataclasses
import re
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


def _optional(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], method: str) -> Any:
    """``obj[key]`` when present and not null, checked as ``_get`` checks; else None."""
    if obj.get(key) is None:
        return None
    return _get(obj, key, kind, method)


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


class _WireKeys:
    """Lets a typed result be read by its members' wire names too (``status.cache["staleServed"]``),
    as the plain objects it replaced were."""

    def __getitem__(self, key: str) -> Any:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if _camel(f.name) == key:
                return getattr(self, f.name)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def _int(obj: Any, key: str, method: str) -> int:
    return _get(obj, key, int, method)


@dataclass(frozen=True)
class FamilyTTLs:
    """``resolve``'s ``ttls`` (family both only): each family's own TTL in seconds, the negative
    answer's for a family without an address."""

    ipv4: int
    ipv6: int

    @classmethod
    def from_json(cls, ttls: Any) -> FamilyTTLs:
        m = "resolve ttls"
        return cls(_get(ttls, "ipv4", int, m), _get(ttls, "ipv6", int, m))


@dataclass(frozen=True)
class Resolution:
    """A ``resolve`` answer. ``source`` is cache, upstream, system, literal, static or fleet;
    ``ttls`` is None unless family both was asked for."""

    host: str
    ipv4: list[str]
    ipv6: list[str]
    ttl: int
    stale: bool
    source: str
    upstream: str | None = None
    ttls: FamilyTTLs | None = None
    #: The calling uid's key to the daemon's hosts map (only with the ``hostsMap`` param, which the
    #: NSS module sends).
    hosts_map_key: str | None = None

    @property
    def addresses(self) -> list[str]:
        """Every address, IPv4 first (the order connections are tried in)."""
        return self.ipv4 + self.ipv6

    @classmethod
    def from_json(cls, result: Any) -> Resolution:
        m = "resolve"
        ttls = _optional(result, "ttls", dict, m)
        return cls(_get(result, "host", str, m), list(_get(result, "ipv4", list, m)),
                   list(_get(result, "ipv6", list, m)), _get(result, "ttl", int, m), _get(result, "stale", bool, m),
                   _get(result, "source", str, m), result.get("upstream"),
                   FamilyTTLs.from_json(ttls) if ttls is not None else None,
                   _optional(result, "hostsMapKey", str, m))


@dataclass(frozen=True)
class ReverseName(_WireKeys):
    """One name of a ``reverse`` answer: ``ttl`` the seconds its own answer is still valid (0
    past it), ``remembered_for`` the seconds until the daemon forgets it for the address."""

    host: str
    ttl: int
    remembered_for: int

    @classmethod
    def from_json(cls, n: Any) -> ReverseName:
        m = "reverse names"
        return cls(_get(n, "host", str, m), _int(n, "ttl", m), _int(n, "rememberedFor", m))


@dataclass(frozen=True)
class ReverseLookup:
    """A ``reverse`` answer: the host names handed out for ``address`` to this user, most
    recent first; ``names`` holds the same hosts in the same order, each with its TTLs."""

    address: str
    hosts: list[str]
    ttl: int
    names: list[ReverseName]

    @classmethod
    def from_json(cls, result: Any) -> ReverseLookup:
        m = "reverse"
        names = [ReverseName.from_json(n) for n in _get(result, "names", list, m)]
        return cls(_get(result, "address", str, m), list(_get(result, "hosts", list, m)), _get(result, "ttl", int, m),
                   names)


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
class ServiceAddress:
    """One service address of an upstream: service failures in a row, and whether it is rotated out."""

    address: str
    failures: int
    backing_off: bool


@dataclass(frozen=True)
class ServiceAddresses:
    """``status.upstreams[].serviceAddresses``: where an upstream with several service addresses
    sends its queries. ``source`` is configured, boot, persisted or scheduler; ``scheduler_error``
    and ``next_refresh`` (seconds) are None without a scheduler."""

    source: str
    current: str
    addresses: list[ServiceAddress]
    scheduler_error: str | None
    next_refresh: float | None

    @classmethod
    def from_json(cls, s: Any) -> ServiceAddresses:
        m = "status serviceAddresses"
        addresses = [ServiceAddress(_get(a, "address", str, m), _get(a, "failures", int, m),
                                    _get(a, "backingOff", bool, m))
                     for a in _get(s, "addresses", list, m)]
        next_refresh = _optional(s, "nextRefresh", (int, float), m)
        return cls(_get(s, "source", str, m), _get(s, "current", str, m), addresses,
                   _optional(s, "schedulerError", str, m), float(next_refresh) if next_refresh is not None else None)


@dataclass(frozen=True)
class UpstreamStatus:
    """One configured upstream in ``status``. ``service_addresses`` is None for an upstream with
    one service address; ``answered`` counts the queries it answered since the daemon started;
    ``domains`` (with ``Route=`` lines only, else None) lists the routed domains it is asked for,
    ``"."`` standing for the names outside every route; ``warning`` (else None) says what is wrong
    with its configuration (a billed upstream that every name outside the routes goes to)."""

    name: str
    kind: str
    healthy: bool
    last_error: str | None
    latency_ms: float | None
    service_addresses: ServiceAddresses | None = None
    answered: int | None = None
    domains: list[str] | None = None
    warning: str | None = None

    @classmethod
    def from_json(cls, u: Any) -> UpstreamStatus:
        m = "status"
        service = _optional(u, "serviceAddresses", dict, m)
        domains = _optional(u, "domains", list, m)
        if domains is not None and not all(isinstance(d, str) for d in domains):
            raise ProtocolError(f"{m}: 'domains' holds a value that is not a string")
        return cls(_get(u, "name", str, m), _get(u, "kind", str, m), _get(u, "healthy", bool, m),
                   u.get("lastError"), u.get("latencyMs"),
                   ServiceAddresses.from_json(service) if service is not None else None,
                   _optional(u, "answered", int, m), domains, _optional(u, "warning", str, m))


@dataclass(frozen=True)
class NetworkStatus:
    """``status.network``: whether the daemon watches the machine's address and route changes,
    how many it saw, and the last one's Unix time (None before the first)."""

    watching: bool
    changes: int
    last_change: int | None

    @classmethod
    def from_json(cls, n: Any) -> NetworkStatus:
        m = "status network"
        return cls(_get(n, "watching", bool, m), _get(n, "changes", int, m), _optional(n, "lastChange", int, m))


@dataclass(frozen=True)
class CacheCounters(_WireKeys):
    """``status.cache`` and ``statistics.cache``: entries now, hits, misses and stale answers served."""

    entries: int
    hits: int
    misses: int
    stale_served: int

    @classmethod
    def from_json(cls, c: Any, method: str = "status cache") -> CacheCounters:
        return cls(_int(c, "entries", method), _int(c, "hits", method), _int(c, "misses", method),
                   _int(c, "staleServed", method))


@dataclass(frozen=True)
class FleetStatus(_WireKeys):
    """``status.fleet`` (with a [Fleet] tier only): ``state`` is connecting, connected,
    unreachable, authentication-failed or full; ``lag`` (seconds) and ``last_error`` may be None;
    ``last_state_change`` is Unix seconds, ``outbox`` the entries waiting to be sent, ``rejected``
    the fleet entries refused since start."""

    connected: bool
    state: str
    last_error: str | None
    last_state_change: int
    lag: float | None
    outbox: int
    rejected: int

    @classmethod
    def from_json(cls, f: Any) -> FleetStatus:
        m = "status fleet"
        lag = _optional(f, "lag", (int, float), m)
        return cls(_get(f, "connected", bool, m), _get(f, "state", str, m), _optional(f, "lastError", str, m),
                   _int(f, "lastStateChange", m), float(lag) if lag is not None else None, _int(f, "outbox", m),
                   _int(f, "rejected", m))


@dataclass(frozen=True)
class Status:
    """A ``status`` answer. ``fleet`` is None without a fleet tier, ``network`` None from a
    daemon that does not send it; ``raw`` is the whole result, members a newer daemon adds
    included."""

    version: str
    uptime: float
    cache: CacheCounters
    cookie_count: int
    upstreams: list[UpstreamStatus]
    fleet: FleetStatus | None
    raw: dict[str, Any]
    network: NetworkStatus | None = None

    @classmethod
    def from_json(cls, result: Any) -> Status:
        m = "status"
        upstreams = [UpstreamStatus.from_json(u) for u in _get(result, "upstreams", list, m)]
        network = _optional(result, "network", dict, m)
        fleet = _optional(result, "fleet", dict, m)
        return cls(_get(result, "version", str, m), float(_get(result, "uptime", (int, float), m)),
                   CacheCounters.from_json(_get(result, "cache", dict, m)),
                   _get(_get(result, "cookies", dict, m), "count", int, m), upstreams,
                   FleetStatus.from_json(fleet) if fleet is not None else None, dict(result),
                   NetworkStatus.from_json(network) if network is not None else None)


@dataclass(frozen=True)
class CacheEntry(_WireKeys):
    """One ``showCache`` entry: ``family`` ipv4 or ipv6, ``ttl`` 0 once expired, ``stale`` when
    kept only to be served while the upstreams fail, ``upstream`` the one that answered."""

    host: str
    family: str
    addresses: list[str]
    ttl: int
    stale: bool
    upstream: str | None

    @classmethod
    def from_json(cls, e: Any) -> CacheEntry:
        m = "showCache"
        return cls(_get(e, "host", str, m), _get(e, "family", str, m), list(_get(e, "addresses", list, m)),
                   _int(e, "ttl", m), _get(e, "stale", bool, m), _optional(e, "upstream", str, m))


@dataclass(frozen=True)
class UpstreamCounters(_WireKeys):
    """``statistics.upstreams[]``: one upstream's queries and failures since ``since``."""

    name: str
    queries: int
    failures: int


@dataclass(frozen=True)
class CookieCounters(_WireKeys):
    """``statistics.cookies``: Set-Cookie values stored and rejected, cookies deleted and Cookie
    headers handed out since ``since``."""

    stored: int
    rejected: int
    deleted: int
    headers: int


@dataclass(frozen=True)
class Statistics(_WireKeys):
    """A ``statistics`` answer: counters since ``since`` (Unix seconds)."""

    since: int
    cache: CacheCounters
    upstreams: list[UpstreamCounters]
    cookies: CookieCounters

    @classmethod
    def from_json(cls, result: Any) -> Statistics:
        m = "statistics"
        cookies = _get(result, "cookies", dict, m)
        return cls(_int(result, "since", m), CacheCounters.from_json(_get(result, "cache", dict, m), m),
                   [UpstreamCounters(_get(u, "name", str, m), _int(u, "queries", m), _int(u, "failures", m))
                    for u in _get(result, "upstreams", list, m)],
                   CookieCounters(_int(cookies, "stored", m), _int(cookies, "rejected", m), _int(cookies, "deleted", m),
                                  _int(cookies, "headers", m)))


class CookieHeader(str):
    """``getCookieHeader``'s answer: the header value itself (a str, "" for none), with
    ``header`` and ``count`` (how many cookies it holds)."""

    header: str
    count: int

    def __new__(cls, header: str, count: int = 0) -> CookieHeader:
        value = super().__new__(cls, header)
        value.header, value.count = header, count
        return value


@dataclass(frozen=True)
class LeftOutCookie:
    """A cookie ``exportCookies`` left out of its text (a TAB or line break in it)."""

    domain: str
    path: str
    name: str


class ExportedCookies(str):
    """``exportCookies``' answer: the cookies.txt text itself (a str), with ``data`` and
    ``left_out`` (the cookies the format cannot hold; empty when none)."""

    data: str
    left_out: list[LeftOutCookie]

    def __new__(cls, data: str, left_out: list[LeftOutCookie] | None = None) -> ExportedCookies:
        value = super().__new__(cls, data)
        value.data, value.left_out = data, list(left_out or [])
        return value

    @classmethod
    def from_json(cls, result: Any) -> ExportedCookies:
        m = "exportCookies"
        left_out = [LeftOutCookie(_get(c, "domain", str, m), _get(c, "path", str, m), _get(c, "name", str, m))
                    for c in (_optional(result, "leftOut", list, m) or [])]
        return cls(_get(result, "data", str, m), left_out)


class MetricsText(str):
    """``metrics``' answer: the exposition text itself (a str), with ``text`` and ``content_type``."""

    text: str
    content_type: str

    def __new__(cls, text: str, content_type: str = "") -> MetricsText:
        value = super().__new__(cls, text)
        value.text, value.content_type = text, content_type
        return value
