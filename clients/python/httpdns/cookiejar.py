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

`export_mozilla` writes the jar as a cookies.txt that ``http.cookiejar.MozillaCookieJar`` loads
with its session cookies (the daemon's ``exportCookies`` writes curl's expiry 0 for those,
which MozillaCookieJar takes for expired and drops).
"""

from __future__ import annotations

import http.cookiejar
import logging
import os
import time
import urllib.request
from typing import Any, Iterator

from ._adapters import report_rejected, request_host
from ._client import Client
from ._types import Cookie

__all__ = ["DaemonCookieJar", "export_mozilla"]


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


def export_mozilla(client: Client, path: str | os.PathLike[str], domain: str | None = None) -> int:
    """Writes this user's cookies (of ``domain`` and its subdomains when given) to ``path`` as a
    Netscape cookies.txt for ``http.cookiejar.MozillaCookieJar``: a session cookie has an empty
    expiry, so ``MozillaCookieJar().load(path, ignore_discard=True)`` keeps it. HttpOnly
    cookies carry curl's ``#HttpOnly_`` prefix. The file is created with mode 0600 (it holds the
    session); a cookie the format cannot hold (a TAB or line break in it) is left out and
    logged. Returns how many cookies were written."""
    lines = ["# Netscape HTTP Cookie File", "# Written by httpdns.cookiejar.export_mozilla from httpdnsd's jar", ""]
    for c in client.list_cookies(domain):
        fields = ["." + c.domain if not c.host_only else c.domain, "FALSE" if c.host_only else "TRUE", c.path,
                  "TRUE" if c.secure else "FALSE", "" if c.expires is None else str(c.expires), c.name, c.value]
        if any(ch in field for field in fields for ch in "\t\r\n"):
            logging.getLogger("httpdns").warning("export_mozilla left out the cookie %r of %s: cookies.txt "
                                                 "cannot hold a TAB or line break", c.name, c.domain)
            continue
        lines.append(("#HttpOnly_" if c.http_only else "") + "\t".join(fields))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines) - 3
