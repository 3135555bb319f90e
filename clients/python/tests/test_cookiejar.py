"""httpdns.cookiejar.DaemonCookieJar with urllib.request (which looks localhost up itself)."""

import http.cookiejar
import os
import ssl
import time
import urllib.request

import pytest

import httpdns
import httpdns.cookiejar
from httpdns.cookiejar import DaemonCookieJar


@pytest.fixture
def jar(world, daemon):
    daemon.delete_cookies(all=True)
    return DaemonCookieJar(socket=world.socket)


def opener(world, jar):
    context = ssl.create_default_context(cafile=world.ca)
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar),
                                       urllib.request.HTTPSHandler(context=context),
                                       urllib.request.ProxyHandler({}))


def test_urllib_stores_each_hops_cookies_and_sends_the_daemons(world, token, jar, daemon):
    target = world.url("localhost", token + "/landed/echo")
    url = world.url("localhost", f"{token}/redirect?status=302&to={world.query(target)}&cookie=hop%3D1")
    with opener(world, jar).open(url) as response:
        import json
        landed = json.load(response)
    assert landed["cookie"] == "hop=1"  # stored from the 302, sent on the next hop
    assert daemon.get_cookie_header(world.url("localhost", "/")) == "hop=1"
    # Another opener with another jar object sees the same session.
    with opener(world, DaemonCookieJar(socket=world.socket)).open(world.url("localhost", token + "/x/echo")) as again:
        assert b'"cookie": "hop=1"' in again.read()


def test_the_jar_lists_sets_and_clears_through_the_daemon(world, jar, daemon):
    daemon.handle_set_cookie("https://jar.example.test/", ["a=1; Path=/; HttpOnly", "b=2; Domain=jar.example.test"])
    cookies = sorted(jar, key=lambda c: c.name)
    assert [(c.name, c.value, c.domain) for c in cookies] == [("a", "1", "jar.example.test"),
                                                             ("b", "2", ".jar.example.test")]
    assert cookies[0].has_nonstandard_attr("HttpOnly") and len(jar) == 2
    jar.set_cookie(http.cookiejar.Cookie(0, "c", "3", None, False, "jar.example.test", False, False, "/", True,
                                         True, None, True, None, None, {}))
    assert daemon.get_cookie_header("https://jar.example.test/") == "a=1; b=2; c=3"
    jar.clear("jar.example.test", "/", "a")
    assert daemon.get_cookie_header("https://jar.example.test/") == "b=2; c=3"
    with pytest.raises(KeyError):
        jar.clear("jar.example.test", "/", "a")
    jar.clear_session_cookies()
    assert daemon.get_cookie_header("https://jar.example.test/") == ""
    daemon.handle_set_cookie("https://jar.example.test/", "d=4")
    jar.clear()
    assert len(jar) == 0


def test_a_refusal_is_an_rpc_error(world, jar):
    request = urllib.request.Request("https://127.0.0.4/")  # an address handed out for several names
    httpdns.Client(world.socket).resolve("failover.example.test")
    httpdns.Client(world.socket).resolve("wrongcert.example.test")
    with pytest.raises(httpdns.RPCError) as raised:
        jar.add_cookie_header(request)
    assert raised.value.reason == "ambiguous-address"


def test_an_ip_url_with_a_host_header_keys_the_cookies_by_that_host(world, token, jar, daemon, caplog):
    daemon.resolve("failover.example.test")
    daemon.resolve("wrongcert.example.test")  # 127.0.0.4 names several hosts: the header decides
    url = world.url("127.0.0.4", f"{token}/set?cookie=jarsid%3D1%3B%20Domain%3Dexample.test%3B%20Path%3D%2F"
                                 f"&cookie=bad%3D2%3B%20Domain%3Delsewhere.test", "http")
    with caplog.at_level("WARNING", logger="httpdns"):
        opener(world, jar).open(urllib.request.Request(url, headers={"Host": "py.example.test"})).close()
    [refused] = [r for r in caplog.records if r.name == "httpdns"]
    assert "'bad'" in refused.getMessage() and "domain-mismatch" in refused.getMessage()
    [record] = world.requests_with(token)
    assert (record["server"], record["host"]) == ("127.0.0.4", "py.example.test")
    [cookie] = daemon.list_cookies("example.test")
    assert (cookie.name, cookie.domain, cookie.host_only) == ("jarsid", "example.test", False)
    echo = world.url("127.0.0.4", token + "/again/echo", "http")
    with opener(world, jar).open(urllib.request.Request(echo, headers={"Host": "app.example.test"})) as again:
        assert b'"cookie": "jarsid=1"' in again.read()


def test_export_mozilla_keeps_session_cookies_for_mozillacookiejar(world, jar, daemon, tmp_path):
    daemon.handle_set_cookie("https://moz.example.test/", [
        "session=s1; Path=/; Secure; HttpOnly", "lasting=l1; Domain=moz.example.test; Path=/app; Max-Age=3600"])
    path = tmp_path / "cookies.txt"
    assert httpdns.cookiejar.export_mozilla(daemon, path) == 2
    loaded = http.cookiejar.MozillaCookieJar()
    loaded.load(str(path), ignore_discard=True)
    cookies = {c.name: c for c in loaded}
    assert sorted(cookies) == ["lasting", "session"]
    session = cookies["session"]
    assert (session.value, session.domain, session.secure, session.expires, session.discard) == (
        "s1", "moz.example.test", True, None, True)
    assert session.has_nonstandard_attr("HTTPOnly")  # MozillaCookieJar's spelling of #HttpOnly_
    lasting = cookies["lasting"]
    assert (lasting.domain, lasting.path, lasting.discard) == (".moz.example.test", "/app", False)
    assert lasting.expires > time.time() + 3000
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    # The daemon's own export (curl's expiry 0 for a session cookie) loses it there.
    (tmp_path / "daemon.txt").write_text(daemon.export_cookies())
    from_daemon = http.cookiejar.MozillaCookieJar()
    from_daemon.load(str(tmp_path / "daemon.txt"), ignore_discard=True)
    assert "session" not in {c.name for c in from_daemon}
