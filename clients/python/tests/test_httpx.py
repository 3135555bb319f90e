"""httpdns.httpx.Client and AsyncClient against the fixture's origins, upstream and proxy."""

import asyncio

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
