"""``DaemonCookieJar``: an ``http.cookiejar.CookieJar`` whose cookies live in httpdnsd's jar.

    import urllib.request, httpdns.cookiejar
    jar = httpdns.cookiejar.DaemonCookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open("https://app.example.com/api/me")     # the machine's session cookie is sent

``urllib.request`` (and any library that takes a CookieJar) then shares the machine's session:
each request gets the daemon's Cookie header for its URL, each response's Set-Cookie values
(redirects included: urllib hands every hop's response to the jar) are stored through the
daemon for the URL that set them. Nothing is kept in this process. The daemon applies its own
RFC 6265bis rules, so the jar's ``policy`` is not consulted. Connections are the library's own:
urllib looks host names up itself (with the NSS module, that is the daemon too).

A request to an IP-literal URL with a ``Host`` header naming a host (``Request(url,
headers={"Host": "app.example.com"})``) has its cookies looked up and stored under that host
(urllib itself connects to the address and checks TLS against it). urllib copies a request's
headers, Host included, onto its redirects: a redirect to a URL with a host name is keyed by
that name, one to another IP literal by the copied Host header. Without a host name, an address
this user's answers give for several hosts raises `httpdns.AmbiguousAddress` (naming them).
Cookies the daemon refuses are logged (logger ``httpdns``, WARNING).
"""

from __future__ import annotations

import http.cookiejar
import time
import urllib.request
from typing import Any, Iterator

from ._adapters import report_rejected, request_host
from ._client import Client
from ._types import Cookie

__all__ = ["DaemonCookieJar"]


def _set_cookie_line(cookie: http.cookiejar.Cookie, *, expired: bool = False) -> str:
    """A Set-Cookie value that stores ``cookie`` (or, ``expired``, deletes it) as it is."""
    parts = [f"{cookie.name}={cookie.value}" if cookie.value is not None else cookie.name]
    if cookie.domain_specified or cookie.domain.startswith("."):
        parts.append("Domain=" + cookie.domain.lstrip("."))
    parts.append("Path=" + (cookie.path or "/"))
    if expired:
        parts.append("Max-Age=0")
    elif cookie.expires is not None:
        parts.append("Expires=" + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(cookie.expires)))
    if cookie.secure:
        parts.append("Secure")
    if cookie.has_nonstandard_attr("HttpOnly"):
        parts.append("HttpOnly")
    same_site = cookie.get_nonstandard_attr("SameSite")
    if same_site:
        parts.append("SameSite=" + same_site)
    return "; ".join(parts)


def _host(request: urllib.request.Request) -> str | None:
    """The host a request's cookies are keyed by: its URL's host name, or for an IP-literal URL
    the one its Host header names."""
    return request_host(request.get_full_url(), request.get_header("Host"))


def _url_for(cookie: http.cookiejar.Cookie) -> str:
    scheme = "https" if cookie.secure else "http"
    return f"{scheme}://{cookie.domain.lstrip('.')}{cookie.path or '/'}"


def _to_cookiejar_cookie(c: Cookie) -> http.cookiejar.Cookie:
    rest: dict[str, Any] = {}
    if c.http_only:
        rest["HttpOnly"] = None
    if c.same_site != "default":
        rest["SameSite"] = c.same_site
    domain = c.domain if c.host_only else "." + c.domain
    return http.cookiejar.Cookie(
        version=0, name=c.name, value=c.value, port=None, port_specified=False, domain=domain,
        domain_specified=not c.host_only, domain_initial_dot=not c.host_only, path=c.path, path_specified=True,
        secure=c.secure, expires=c.expires, discard=c.expires is None, comment=None, comment_url=None, rest=rest)


class DaemonCookieJar(http.cookiejar.CookieJar):
    """A CookieJar backed by httpdnsd (``client``, or a `Client` on the default socket)."""

    def __init__(self, client: Client | None = None, *, socket: str | None = None):
        super().__init__()
        self.httpdns = client if client is not None else Client(socket)

    def add_cookie_header(self, request: urllib.request.Request) -> None:
        """Adds the daemon's Cookie header for the request's URL (unless it has one)."""
        if request.has_header("Cookie"):
            return
        url = request.get_full_url()
        header = self.httpdns.get_cookie_header(url, _host(request))
        if header:
            request.add_unredirected_header("Cookie", header)

    def extract_cookies(self, response: Any, request: urllib.request.Request) -> None:
        """Stores the response's Set-Cookie values through the daemon, for the request's URL."""
        values = response.info().get_all("Set-Cookie") or []
        if values:
            self._store(request.get_full_url(), values, _host(request))

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        """Stores one cookie through the daemon, for a URL of its domain and path."""
        self._store(_url_for(cookie), [_set_cookie_line(cookie)], None)

    def set_cookie_if_ok(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> None:
        """Stores one cookie for the request's URL; the daemon decides whether it is acceptable."""
        self._store(request.get_full_url(), [_set_cookie_line(cookie)], _host(request))

    def _store(self, url: str, values: list[str], host: str | None) -> None:
        report_rejected(url, values, self.httpdns.handle_set_cookie(url, values, host))

    def make_cookies(self, response: Any, request: urllib.request.Request) -> list[http.cookiejar.Cookie]:
        """Not supported: the daemon parses Set-Cookie itself (use `extract_cookies`)."""
        raise NotImplementedError("DaemonCookieJar stores Set-Cookie values through the daemon")

    def _listed(self) -> list[http.cookiejar.Cookie]:
        return [_to_cookiejar_cookie(c) for c in self.httpdns.list_cookies()]

    def __iter__(self) -> Iterator[http.cookiejar.Cookie]:
        return iter(self._listed())

    def __len__(self) -> int:
        return len(self.httpdns.list_cookies())

    def clear(self, domain: str | None = None, path: str | None = None, name: str | None = None) -> None:
        """Deletes every cookie, or those of exactly ``domain`` (and ``path``, and ``name``),
        as CookieJar.clear does; a missing cookie raises KeyError."""
        if domain is None:
            self.httpdns.delete_cookies(all=True)
            return
        doomed = [c for c in self._listed()
                  if c.domain == domain and (path is None or c.path == path) and (name is None or c.name == name)]
        if not doomed:
            raise KeyError(domain if path is None else (domain, path) if name is None else (domain, path, name))
        for cookie in doomed:
            self._delete(cookie)

    def clear_session_cookies(self) -> None:
        """Deletes the cookies without an expiry date."""
        for cookie in self._listed():
            if cookie.discard:
                self._delete(cookie)

    def clear_expired_cookies(self) -> None:
        """Nothing to do: the daemon never hands out an expired cookie."""

    def _delete(self, cookie: http.cookiejar.Cookie) -> None:
        # An already-expired cookie of the same name, domain and path deletes it (RFC 6265 5.3).
        self.httpdns.handle_set_cookie(_url_for(cookie), _set_cookie_line(cookie, expired=True))

    def __repr__(self) -> str:
        return f"<DaemonCookieJar on {self.httpdns.socket_path}>"
