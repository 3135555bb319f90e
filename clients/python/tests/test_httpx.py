"""httpdns.httpx.Client and AsyncClient against the fixture's origins, upstream and proxy."""

import asyncio
import json
import time

import httpx
import pytest

import httpdns
import httpdns.httpx


@pytest.fixture
def fresh_jar(daemon):
    daemon.delete_cookies(all=True)


def login_url(world, token):
    home = world.url("app.example.test", token + "/home/echo")
    return world.url("login.example.test", f"{token}/login?domain=example.test&next={world.query(home)}")


def check_login(world, token, response):
    assert response.status_code == 200 and response.json()["cookie"] == "sid=bob"
    sent_login, sent_home = world.requests_with(token)
    assert (sent_login["server"], sent_login["sni"], sent_login["host"], sent_login["method"]) == (
        "127.0.0.2", "login.example.test", world.netloc("login.example.test"), "POST")
    assert (sent_home["server"], sent_home["sni"], sent_home["host"], sent_home["method"]) == (
        "127.0.0.3", "app.example.test", world.netloc("app.example.test"), "GET")


def test_login_through_a_302_to_another_host(world, token, daemon, fresh_jar):
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
        response = client.post(login_url(world, token), data={"user": "bob"})
        check_login(world, token, response)
        assert len(client.cookies) == 0
    assert "sid=bob" in daemon.get_cookie_header(world.url("app.example.test", "/"))


def test_async_login_through_a_302_to_another_host(world, token, daemon, fresh_jar):
    async def main():
        async with httpdns.httpx.AsyncClient(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
            response = await client.post(login_url(world, token), data={"user": "bob"})
            check_login(world, token, response)
            # Concurrent requests share the pools.
            echoes = await asyncio.gather(*(client.get(world.url("app.example.test", f"{token}/c{i}/echo"))
                                            for i in range(5)))
            return [echo.json()["cookie"] for echo in echoes]

    assert asyncio.run(main()) == ["sid=bob"] * 5


@pytest.mark.parametrize("status,method", [(302, "GET"), (303, "GET"), (307, "POST")])
def test_redirect_methods_are_httpx_own(world, token, fresh_jar, status, method):
    target = world.url("app.example.test", token + "/landed/echo")
    url = world.url("login.example.test", f"{token}/redirect?status={status}&to={world.query(target)}&cookie=k%3Dv")
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
        assert client.post(url, content=b"x=1").status_code == 200
        assert client.get(world.url("login.example.test", token + "/back/echo")).json()["cookie"] == "k=v"
    hop, landed, _ = world.requests_with(token)
    assert landed["method"] == method and landed["cookie"] is None


def test_failover_certificate_and_unknown_host(world, token, fresh_jar):
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca) as client:
        assert client.get(world.url("failover.example.test", token + "/echo")).json()["server"] == "127.0.0.4"
        with pytest.raises(httpx.ConnectError):  # the certificate does not name wrongcert.example.test
            client.get(world.url("wrongcert.example.test", token + "/bad/echo"))
        with pytest.raises(httpx.ConnectError) as raised:
            client.get(world.url("nowhere.example.test", "/echo"))
        assert raised.value.__cause__.name == "HostNotFound"


def test_reuse_per_address_and_a_move(world, token, daemon, fresh_jar):
    daemon.handle_set_cookie(world.url("py.example.test", "/"), "moved=yes; Path=/")
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca) as client:
        first = client.get(world.url("py.example.test", token + "/1/echo")).json()
        second = client.get(world.url("py.example.test", token + "/2/echo")).json()
        assert first["server"] == "127.0.0.4" and first["peer"] == second["peer"]
        world.move("py.example.test", ["127.0.0.6"])
        try:
            third = client.get(world.url("py.example.test", token + "/3/echo")).json()
            assert (third["server"], third["sni"], third["cookie"]) == ("127.0.0.6", "py.example.test", "moved=yes")
        finally:
            world.move("py.example.test", ["127.0.0.4"])


def test_a_proxy_is_httpx_own_and_cookies_still_go_through_the_daemon(world, token, daemon, fresh_jar):
    daemon.handle_set_cookie(world.url("app.example.test", "/", "http"), "viaproxy=1; Path=/")
    url = world.url("app.example.test", f"{token}/set?cookie=fromproxy%3D2%3B%20Path%3D%2F", "http")
    proxy_argument = "proxies" if "proxies" in httpx.Client.__init__.__code__.co_varnames else "proxy"
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca, **{proxy_argument: world.proxy}) as client:
        assert client.get(url).status_code == 200
    [record] = world.requests_with(token)
    assert record["cookie"] == "viaproxy=1"
    assert world.proxied(token)[0]["target"] == url
    assert "fromproxy=2" in daemon.get_cookie_header(world.url("app.example.test", "/", "http"))


def test_streaming_bodies(world, token):
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca) as client:
        with client.stream("GET", world.url("py.example.test", token + "/stream?chunks=3")) as response:
            assert [line.rstrip("\n") for line in response.iter_lines() if line] == ["chunk 0", "chunk 1", "chunk 2"]


def test_the_client_takes_no_cookies_of_its_own(world):
    with pytest.raises(TypeError):
        httpdns.httpx.Client(socket=world.socket, cookies={"a": "b"})


def ip_login(world, token):
    home = world.url("login.example.test", token + "/home/echo")
    return world.url("127.0.0.3", f"{token}/login?domain=example.test&next={world.query(home)}")


def check_ip_login(world, token, response, daemon):
    assert response.status_code == 200 and response.json()["cookie"] == "sid=ipbob"
    sent_login, sent_home = world.requests_with(token)[:2]
    assert (sent_login["server"], sent_login["sni"], sent_login["host"], sent_login["method"]) == (
        "127.0.0.3", "app.example.test", "app.example.test", "POST")
    assert (sent_home["server"], sent_home["sni"], sent_home["host"], sent_home["cookie"]) == (
        "127.0.0.2", "login.example.test", world.netloc("login.example.test"), "sid=ipbob")
    [sid] = [c for c in daemon.list_cookies("example.test") if c.name == "sid"]
    assert (sid.domain, sid.host_only) == ("example.test", False)


def test_an_ip_url_with_a_host_header_is_that_host_at_that_address(world, token, daemon, fresh_jar, caplog):
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
        with caplog.at_level("WARNING", logger="httpdns"):
            response = client.post(ip_login(world, token), headers={"Host": "app.example.test"},
                                   data={"user": "ipbob"})
        check_ip_login(world, token, response, daemon)
        assert not [r for r in caplog.records if r.name == "httpdns"]
        later = client.get(world.url("app.example.test", token + "/later/echo")).json()
        assert (later["server"], later["sni"], later["cookie"]) == ("127.0.0.3", "app.example.test", "sid=ipbob")


def test_async_an_ip_url_with_a_host_header(world, token, daemon, fresh_jar):
    async def main():
        async with httpdns.httpx.AsyncClient(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
            return await client.post(ip_login(world, token), headers={"Host": "app.example.test"},
                                     data={"user": "ipbob"})

    check_ip_login(world, token, asyncio.run(main()), daemon)


def test_host_keyword_is_the_host_header(world, token, daemon, fresh_jar):
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
        response = client.post(ip_login(world, token), host="app.example.test", data={"user": "ipbob"})
        check_ip_login(world, token, response, daemon)
        with client.stream("GET", world.url("127.0.0.3", token + "/again/echo"), host="app.example.test") as streamed:
            again = json.loads(streamed.read())
        assert (again["server"], again["sni"], again["host"], again["cookie"]) == (
            "127.0.0.3", "app.example.test", "app.example.test", "sid=ipbob")


def test_async_host_keyword(world, token, daemon, fresh_jar):
    async def main():
        async with httpdns.httpx.AsyncClient(socket=world.socket, verify=world.ca, follow_redirects=True) as client:
            return await client.post(ip_login(world, token), host="app.example.test", data={"user": "ipbob"})

    check_ip_login(world, token, asyncio.run(main()), daemon)


def test_an_ambiguous_address_without_a_host_raises_before_sending(world, token, daemon, fresh_jar):
    daemon.resolve("failover.example.test")
    daemon.resolve("wrongcert.example.test")
    with httpdns.httpx.Client(socket=world.socket, verify=False) as client:
        with pytest.raises(httpx.TransportError) as raised:
            client.get(world.url("127.0.0.4", token + "/echo"))
    assert isinstance(raised.value, httpdns.AmbiguousAddress)
    assert {"failover.example.test", "wrongcert.example.test"} <= set(raised.value.candidates)
    assert "Host header" in str(raised.value) and world.requests_with(token) == []


def test_refused_cookies_are_logged(world, token, fresh_jar, caplog):
    url = world.url("py.example.test", f"{token}/set?cookie=ok%3D1&cookie=bad%3D2%3B%20Domain%3Delsewhere.test")
    with httpdns.httpx.Client(socket=world.socket, verify=world.ca) as client:
        with caplog.at_level("WARNING", logger="httpdns"):
            assert client.get(url).status_code == 200
    [record] = [r for r in caplog.records if r.name == "httpdns"]
    assert "'bad'" in record.getMessage() and "domain-mismatch" in record.getMessage()


def test_an_unreachable_daemon_is_an_httpx_transport_error(world, token, tmp_path):
    missing = str(tmp_path / "nobody.sock")
    with httpdns.httpx.Client(socket=missing, verify=world.ca) as client:
        with pytest.raises(httpx.TransportError) as raised:
            client.get(world.url("py.example.test", token + "/echo"))
    assert isinstance(raised.value, httpx.ConnectError) and isinstance(raised.value, httpdns.DaemonUnavailable)
    assert isinstance(raised.value.__cause__, httpdns.DaemonUnavailable)

    async def main():
        async with httpdns.httpx.AsyncClient(socket=missing, verify=world.ca) as client:
            await client.get(world.url("py.example.test", token + "/echo"))

    with pytest.raises(httpx.TransportError):
        asyncio.run(main())
    assert world.requests_with(token) == []


def test_a_dead_stale_address_costs_no_failed_request(world, token, daemon):
    host = "stale-httpx.example.test"
    world.stale_then_moved(host)
    with httpdns.httpx.Client(socket=world.socket, timeout=httpx.Timeout(10, connect=3)) as client:
        started = time.monotonic()
        echo = client.get(world.url(host, token + "/sync/echo", "http")).json()
        assert time.monotonic() - started < 3 + 1
    assert echo["server"] == "127.0.0.4"


def test_async_a_dead_stale_address_costs_no_failed_request(world, token, daemon):
    host = "stale-httpx-async.example.test"
    world.stale_then_moved(host)

    async def main():
        async with httpdns.httpx.AsyncClient(socket=world.socket, timeout=httpx.Timeout(10, connect=3)) as client:
            started = time.monotonic()
            echo = (await client.get(world.url(host, token + "/async/echo", "http"))).json()
            return echo, time.monotonic() - started

    echo, took = asyncio.run(main())
    assert echo["server"] == "127.0.0.4" and took < 3 + 1


def test_a_black_holed_stale_address_costs_one_connect_timeout(world, token, black_hole):
    host = "blackhole-httpx.example.test"
    world.stale_then_moved(host, dead=black_hole)

    async def main():
        async with httpdns.httpx.AsyncClient(socket=world.socket, timeout=httpx.Timeout(10, connect=1)) as client:
            return (await client.get(world.url(host, token + "/async/echo", "http"))).json()

    started = time.monotonic()
    assert asyncio.run(main())["server"] == "127.0.0.4"
    assert time.monotonic() - started < 1 + 1
    world.stale_then_moved(host, dead=black_hole)
    with httpdns.httpx.Client(socket=world.socket, timeout=httpx.Timeout(10, connect=1)) as client:
        started = time.monotonic()
        assert client.get(world.url(host, token + "/sync/echo", "http")).json()["server"] == "127.0.0.4"
        assert time.monotonic() - started < 1 + 1
