"""httpdns.requests.Session against the fixture's origins, upstream and proxy."""

import time

import pytest
import requests

import httpdns
import httpdns.requests


@pytest.fixture
def session(world, daemon):
    daemon.delete_cookies(all=True)  # each test starts with an empty jar
    with httpdns.requests.Session(socket=world.socket) as session:
        session.verify = world.ca
        yield session


def login(world, session, token, user):
    """POST to the login host, 302 to the app host with a Domain=example.test session cookie."""
    home = world.url("app.example.test", token + "/home/echo")
    url = world.url("login.example.test", f"{token}/login?domain=example.test&next={world.query(home)}")
    return session.post(url, data={"user": user})


def test_login_post_then_302_to_another_host_with_the_session_cookie(world, session, token, daemon):
    response = login(world, session, token, "alice")
    assert response.status_code == 200 and response.json()["cookie"] == "sid=alice"
    assert [r.status_code for r in response.history] == [302]
    sent_login, sent_home = world.requests_with(token)
    # Each connection went to the address the daemon gave, with the host name for SNI and Host.
    assert (sent_login["server"], sent_login["sni"], sent_login["host"]) == (
        "127.0.0.2", "login.example.test", world.netloc("login.example.test"))
    assert (sent_login["method"], sent_login["body"]) == ("POST", "user=alice")
    assert (sent_home["server"], sent_home["sni"], sent_home["host"]) == (
        "127.0.0.3", "app.example.test", world.netloc("app.example.test"))
    assert (sent_home["method"], sent_home["body"], sent_home["cookie"]) == ("GET", "", "sid=alice")
    # The cookie is in the daemon's jar, not the session's.
    assert len(session.cookies) == 0
    [sid] = [c for c in daemon.list_cookies("example.test") if c.name == "sid"]
    assert (sid.domain, sid.host_only, sid.http_only, sid.secure) == ("example.test", False, True, True)
    # A second session, told nothing, rides it.
    with httpdns.requests.Session(socket=world.socket) as other:
        assert other.get(world.url("app.example.test", token + "/again/echo"), verify=world.ca).json()[
            "cookie"] == "sid=alice"


@pytest.mark.parametrize("status,method,body", [(301, "GET", ""), (302, "GET", ""), (303, "GET", ""),
                                                (307, "POST", "x=1"), (308, "POST", "x=1")])
def test_redirects_follow_requests_rules_and_store_each_hops_cookie(world, session, token, status, method, body):
    target = world.url("app.example.test", token + "/landed/echo")
    url = world.url("login.example.test",
                    f"{token}/redirect?status={status}&to={world.query(target)}&cookie=hop{status}%3D{status}")
    response = session.post(url, data={"x": "1"})
    assert response.status_code == 200
    _, landed = world.requests_with(token)
    assert (landed["method"], landed["body"]) == (method, body)
    assert f"hop{status}={status}" not in (landed["cookie"] or "")  # host-only on the login host
    again = session.get(world.url("login.example.test", token + "/back/echo")).json()
    assert f"hop{status}={status}" in again["cookie"]


def test_the_requests_own_cookies_are_sent_with_the_daemons(world, session, token, daemon):
    daemon.handle_set_cookie(world.url("py.example.test", "/"), "fromjar=1; Path=/")
    echo = session.get(world.url("py.example.test", token + "/echo"), cookies={"own": "2"}).json()
    assert echo["cookie"] == "fromjar=1; own=2"
    daemon.delete_cookies(domain="py.example.test")


def test_falls_over_to_the_next_address(world, session, token):
    response = session.get(world.url("failover.example.test", token + "/echo"))
    assert response.json()["server"] == "127.0.0.4"  # 127.0.0.9 refused the connection


def test_the_certificate_is_checked_against_the_host_name(world, session, token):
    with pytest.raises(requests.exceptions.SSLError):
        session.get(world.url("wrongcert.example.test", token + "/echo"))
    assert world.requests_with(token) == []


def test_an_unknown_host_is_a_connection_error_carrying_the_daemons_error(world, session):
    with pytest.raises(requests.exceptions.ConnectionError) as raised:
        session.get(world.url("nowhere.example.test", "/echo"))
    assert isinstance(raised.value.__cause__, httpdns.RPCError)
    assert raised.value.__cause__.name == "HostNotFound"


def test_connections_are_reused_per_host_and_address_and_follow_a_move(world, session, token, daemon):
    daemon.handle_set_cookie(world.url("py.example.test", "/"), "moved=yes; Path=/")
    first = session.get(world.url("py.example.test", token + "/1/echo")).json()
    second = session.get(world.url("py.example.test", token + "/2/echo")).json()
    assert first["server"] == second["server"] == "127.0.0.4"
    assert first["peer"] == second["peer"]  # one keep-alive connection
    world.move("py.example.test", ["127.0.0.6"])
    try:
        third = session.get(world.url("py.example.test", token + "/3/echo")).json()
        assert (third["server"], third["sni"], third["cookie"]) == ("127.0.0.6", "py.example.test", "moved=yes")
    finally:
        world.move("py.example.test", ["127.0.0.4"])
        daemon.delete_cookies(domain="py.example.test")


def test_a_proxy_is_used_as_requests_does_and_cookies_still_go_through_the_daemon(world, session, token, daemon):
    session.proxies = {"http": world.proxy, "https": world.proxy}
    daemon.handle_set_cookie(world.url("app.example.test", "/", "http"), "viaproxy=1; Path=/")
    url = world.url("app.example.test", f"{token}/set?cookie=fromproxy%3D2%3B%20Path%3D%2F", "http")
    assert session.get(url).status_code == 200
    [record] = world.requests_with(token)
    assert record["cookie"] == "viaproxy=1"
    assert world.proxied(token)[0]["target"] == url  # absolute-form: the proxy did the connecting
    assert "fromproxy=2" in daemon.get_cookie_header(world.url("app.example.test", "/", "http"))
    # HTTPS through the proxy is a CONNECT tunnel to the host name (TLS still checks the name).
    secure = session.get(world.url("app.example.test", token + "/tunnel/echo")).json()
    assert secure["sni"] == "app.example.test"
    assert any(e["method"] == "CONNECT" and e["target"] == world.netloc("app.example.test")
               for e in world.proxied(""))
    daemon.delete_cookies(domain="app.example.test", name="viaproxy")
    daemon.delete_cookies(domain="app.example.test", name="fromproxy")


def test_streaming_bodies(world, session, token):
    with session.get(world.url("py.example.test", token + "/stream?chunks=4"), stream=True) as response:
        assert list(response.iter_lines()) == [b"chunk 0", b"chunk 1", b"chunk 2", b"chunk 3"]


def test_the_session_refuses_cookies_of_its_own(session):
    with pytest.raises(TypeError):
        session.cookies.set("a", "b")


def test_an_ip_url_with_a_host_header_is_that_host_at_that_address(world, session, token, daemon, caplog):
    # POST to 127.0.0.3 naming app.example.test: a Domain=example.test cookie is the host's own
    # (not refused as domain-mismatch for an address), then a 302 to another host by name.
    home = world.url("login.example.test", token + "/home/echo")
    url = world.url("127.0.0.3", f"{token}/login?domain=example.test&next={world.query(home)}")
    with caplog.at_level("WARNING", logger="httpdns"):
        response = session.post(url, headers={"Host": "app.example.test"}, data={"user": "ipalice"})
    assert response.status_code == 200 and response.json()["cookie"] == "sid=ipalice"
    assert not [r for r in caplog.records if r.name == "httpdns"]
    sent_login, sent_home = world.requests_with(token)
    assert (sent_login["server"], sent_login["sni"], sent_login["host"], sent_login["method"]) == (
        "127.0.0.3", "app.example.test", "app.example.test", "POST")
    # The redirect's hop has its own host name, not the first Host header.
    assert (sent_home["server"], sent_home["sni"], sent_home["host"], sent_home["cookie"]) == (
        "127.0.0.2", "login.example.test", world.netloc("login.example.test"), "sid=ipalice")
    [sid] = [c for c in daemon.list_cookies("example.test") if c.name == "sid"]
    assert (sid.domain, sid.host_only) == ("example.test", False)
    # A later request by name rides the session; host= is the same as the header.
    later = session.get(world.url("app.example.test", token + "/later/echo")).json()
    assert (later["server"], later["sni"], later["cookie"]) == ("127.0.0.3", "app.example.test", "sid=ipalice")
    again = session.get(world.url("127.0.0.3", token + "/again/echo"), host="app.example.test").json()
    assert (again["server"], again["sni"], again["host"], again["cookie"]) == (
        "127.0.0.3", "app.example.test", "app.example.test", "sid=ipalice")


def test_an_ambiguous_address_without_a_host_raises_before_sending(world, session, token, daemon):
    daemon.resolve("failover.example.test")
    daemon.resolve("wrongcert.example.test")  # 127.0.0.4 now names both for this user
    with pytest.raises(requests.RequestException) as raised:
        session.get(world.url("127.0.0.4", token + "/echo"), verify=False)
    error = raised.value
    assert isinstance(error, httpdns.AmbiguousAddress) and isinstance(error.__cause__, httpdns.RPCError)
    assert {"failover.example.test", "wrongcert.example.test"} <= set(error.candidates)
    assert "failover.example.test" in str(error) and "Host header" in str(error)
    assert world.requests_with(token) == []


def test_refused_cookies_are_logged(world, session, token, caplog):
    url = world.url("py.example.test", f"{token}/set?cookie=ok%3D1&cookie=bad%3D2%3B%20Domain%3Delsewhere.test")
    with caplog.at_level("WARNING", logger="httpdns"):
        assert session.get(url).status_code == 200
    [record] = [r for r in caplog.records if r.name == "httpdns"]
    assert "'bad'" in record.getMessage() and "domain-mismatch" in record.getMessage()


def test_an_unreachable_daemon_is_requests_connection_error(world, token, tmp_path):
    with httpdns.requests.Session(socket=str(tmp_path / "nobody.sock")) as session:
        with pytest.raises(requests.ConnectionError) as raised:
            session.get(world.url("py.example.test", token + "/echo"), verify=world.ca)
    assert isinstance(raised.value, httpdns.DaemonUnavailable)
    assert isinstance(raised.value.__cause__, httpdns.DaemonUnavailable)
    assert world.requests_with(token) == []



def test_a_dead_stale_address_costs_no_failed_request(world, session, token, daemon):
    host = "stale-requests.example.test"
    world.stale_then_moved(host)
    started = time.monotonic()
    echo = session.get(world.url(host, token + "/echo", "http"), timeout=(3, 10)).json()
    assert time.monotonic() - started < 3 + 1
    assert (echo["server"], echo["host"]) == ("127.0.0.4", world.netloc(host, "http"))


def test_a_black_holed_stale_address_costs_one_connect_timeout(world, session, token, black_hole):
    host = "blackhole-requests.example.test"
    world.stale_then_moved(host, dead=black_hole)
    started = time.monotonic()
    echo = session.get(world.url(host, token + "/echo", "http"), timeout=(1, 10)).json()
    assert time.monotonic() - started < 1 + 1
    assert echo["server"] == "127.0.0.4"


def test_a_relative_redirect_keeps_the_host_header(world, session, token):
    url = world.url("127.0.0.3", f"{token}/redirect?status=302&to={world.query(token + '/rel/echo')}")
    echo = session.get(url, host="app.example.test").json()
    assert (echo["server"], echo["sni"], echo["host"]) == ("127.0.0.3", "app.example.test", "app.example.test")
