"""httpdns.Client: socket rules, typed calls, errors, and the connection's protocol handling."""

import asyncio
import json
import os
import socket
import tempfile
import re
import threading
import types
import typing

import pytest

import httpdns
from httpdns._connection import Connection

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


# -- socket rules (httpdnsd-rpc(7), SOCKETS) -----------------------------------------------------

def test_socket_rules(monkeypatch, tmp_path):
    monkeypatch.delenv("HTTPDNSD_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert httpdns.socket_path() == "/run/httpdnsd/httpdnsd.sock"  # no per-user socket there
    per_user = tmp_path / "httpdnsd" / "httpdnsd.sock"
    per_user.parent.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(per_user))
    try:
        assert httpdns.socket_path() == str(per_user)
        monkeypatch.setenv("HTTPDNSD_SOCKET", "/tmp/from-environment.sock")
        assert httpdns.socket_path() == "/tmp/from-environment.sock"
        assert httpdns.socket_path("/tmp/explicit.sock") == "/tmp/explicit.sock"
        assert httpdns.Client("/tmp/explicit.sock").socket_path == "/tmp/explicit.sock"
    finally:
        listener.close()
    monkeypatch.delenv("HTTPDNSD_SOCKET")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert httpdns.socket_path() == "/run/httpdnsd/httpdnsd.sock"


def test_url_host_is_the_clients_own_parse():
    assert httpdns.url_host("https://App.Example.test:8443/a?b") == "app.example.test"
    assert httpdns.url_host("https://203.0.113.10/login") is None
    assert httpdns.url_host("http://[2001:db8::1]:80/") is None
    assert httpdns.url_host("not a url") is None


def test_unreachable_daemon_is_daemon_unavailable(tmp_path):
    client = httpdns.Client(str(tmp_path / "nobody-listens.sock"))
    with pytest.raises(httpdns.DaemonUnavailable) as raised:
        client.status()
    assert "nobody-listens.sock" in str(raised.value)
    assert isinstance(raised.value, ConnectionError)


# -- a fake daemon, for what the real one does not do on demand ----------------------------------

class FakeDaemon:
    """A Unix socket server whose handler gets each connection's request objects and answers
    what the test says (in any order, or not at all)."""

    def __init__(self, handler):
        self.directory = tempfile.mkdtemp()
        self.path = os.path.join(self.directory, "fake.sock")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(self.path)
        self.listener.listen()
        self.handler = handler
        self.connections = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.handler, args=(connection, connection.makefile("rb")),
                             daemon=True).start()

    def close(self):
        self.listener.close()


def send(connection, message):
    connection.sendall(json.dumps(message).encode() + b"\n")


def test_answers_out_of_order_reach_their_callers():
    def handler(connection, reader):
        first = json.loads(reader.readline())
        second = json.loads(reader.readline())
        for request in (second, first):  # the second request is answered first
            send(connection, {"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["params"]["n"]}})

    fake = FakeDaemon(handler)
    client = httpdns.Client(fake.path)
    results = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, client.call("echo", {"n": n})))
               for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {1: {"echo": 1}, 2: {"echo": 2}}
    fake.close()


def test_notifications_go_to_the_connection_handler_and_answers_still_route():
    def handler(connection, reader):
        request = json.loads(reader.readline())
        send(connection, {"jsonrpc": "2.0", "method": "event", "params": {"n": 1}})
        send(connection, {"jsonrpc": "2.0", "id": request["id"], "result": {"subscribed": True}})
        send(connection, {"jsonrpc": "2.0", "method": "event", "params": {"n": 2}})

    fake = FakeDaemon(handler)
    events = []
    arrived = threading.Event()

    def on_notification(message):
        events.append(message["params"]["n"])
        if len(events) == 2:
            arrived.set()

    connection = Connection(fake.path, on_notification)
    _, answer = connection.send("subscribe")
    assert answer.result(10)["result"] == {"subscribed": True}
    assert arrived.wait(10)
    assert events == [1, 2]
    connection.close()
    fake.close()


def test_error_data_is_carried_through_whatever_it_holds():
    data = {"name": "InvalidParams", "field": "url", "reason": "ambiguous-url",
            "serialized": "https://a.example/\\@b.example/", "hosts": ["a.example", "b.example"]}

    def handler(connection, reader):
        for line in reader:
            request = json.loads(line)
            send(connection, {"jsonrpc": "2.0", "id": request["id"],
                              "error": {"code": -32602, "message": "Invalid params: ambiguous URL", "data": data}})

    fake = FakeDaemon(handler)
    client = httpdns.Client(fake.path)
    with pytest.raises(httpdns.RPCError) as raised:
        client.get_cookie_header("https://a.example/\\@b.example/")
    error = raised.value
    assert (error.code, error.name, error.field, error.reason) == (-32602, "InvalidParams", "url", "ambiguous-url")
    assert error.data == data and error.method == "getCookieHeader"
    assert "ambiguous-url" in str(error)
    fake.close()


def test_a_connection_closed_while_idle_is_opened_again():
    def handler(connection, reader):
        request = json.loads(reader.readline())
        send(connection, {"jsonrpc": "2.0", "id": request["id"], "result": {"ok": True}})
        connection.close()  # as the daemon does after IdleTimeout=

    fake = FakeDaemon(handler)
    client = httpdns.Client(fake.path)
    assert client.call("status") == {"ok": True}
    assert client.call("status") == {"ok": True}
    assert fake.connections == 2
    fake.close()


def test_a_close_with_a_request_in_flight_is_reported_not_retried():
    def handler(connection, reader):
        reader.readline()
        reader.readline()
        connection.close()  # two requests were in flight: the second may have been read

    fake = FakeDaemon(handler)
    client = httpdns.Client(fake.path)
    errors = []

    def call():
        try:
            client.call("status")
        except httpdns.DaemonUnavailable as error:
            errors.append(error)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 2
    fake.close()


def test_a_malformed_answer_is_a_protocol_error():
    def handler(connection, reader):
        reader.readline()
        connection.sendall(b"this is not json\n")

    fake = FakeDaemon(handler)
    with pytest.raises(httpdns.DaemonUnavailable) as raised:
        httpdns.Client(fake.path).call("status")
    assert "not JSON" in str(raised.value)
    fake.close()


def test_no_answer_is_a_timeout_and_the_late_answer_is_dropped():
    release = threading.Event()

    def handler(connection, reader):
        first = json.loads(reader.readline())
        release.wait(30)
        send(connection, {"jsonrpc": "2.0", "id": first["id"], "result": "late"})
        second = json.loads(reader.readline())
        send(connection, {"jsonrpc": "2.0", "id": second["id"], "result": "second"})

    fake = FakeDaemon(handler)
    client = httpdns.Client(fake.path)
    with pytest.raises(httpdns.CallTimeout):
        client.call("status", timeout=0.05)  # the fake holds its answer until released
    release.set()
    assert client.call("status") == "second"
    fake.close()


def test_every_call_has_a_deadline_even_when_the_daemon_does_not_read(tmp_path):
    # The adapters' clients and a plain Client wait 30 s by default.
    import httpdns.httpx
    import httpdns.requests
    assert httpdns.Client().timeout == 30
    assert httpdns.requests.Session(socket=str(tmp_path / "s")).httpdns.timeout == 30
    assert httpdns.httpx.Client(socket=str(tmp_path / "s")).httpdns.timeout == 30
    release = threading.Event()
    fake = FakeDaemon(lambda connection, reader: release.wait(30))  # accepts, never reads
    client = httpdns.Client(fake.path, timeout=0.5)
    outcome = []

    def import_a_large_jar():
        try:
            client.import_cookies("# Netscape HTTP Cookie File\n" + "x" * (16 << 20))
        except Exception as error:
            outcome.append(error)

    caller = threading.Thread(target=import_a_large_jar, daemon=True)
    caller.start()
    caller.join(10)
    release.set()
    assert not caller.is_alive(), "the call outlived its deadline: the write to a daemon that does not read blocked"
    assert isinstance(outcome[0], httpdns.CallTimeout)
    fake.close()


# -- typed results of the document's examples ----------------------------------------------------

def document_example(method, name):
    with open(os.path.join(ROOT, "rpc-schema", "httpdnsd.openrpc.json")) as f:
        document = json.load(f)
    [described] = [m for m in document["methods"] if m["name"] == method]
    [example] = [e for e in described["examples"] if e["name"] == name]
    return example["result"]["value"]


def test_status_example_has_typed_service_addresses_and_network():
    status = httpdns.Status.from_json(document_example("status", "running"))
    scheduled, system = status.upstreams
    assert scheduled.service_addresses == httpdns.ServiceAddresses(
        source="scheduler", current="203.0.113.2",
        addresses=[httpdns.ServiceAddress("203.0.113.1", 0, True), httpdns.ServiceAddress("203.0.113.2", 0, False)],
        scheduler_error=None, next_refresh=20100.0)
    assert system.service_addresses is None and system.latency_ms is None
    assert (scheduled.answered, system.answered) == (25, 0)
    assert scheduled.domains is None and system.domains is None  # no Route= lines
    assert status.network == httpdns.NetworkStatus(watching=True, changes=1, last_change=1767228900)


def test_status_cache_and_fleet_are_typed():
    status = httpdns.Status.from_json(document_example("status", "running"))
    assert status.cache == httpdns.CacheCounters(entries=12, hits=340, misses=25, stale_served=2)
    assert status.cache["staleServed"] == 2 and status.fleet is None  # wire names still read
    fleet = {"connected": True, "state": "connected", "lastError": None, "lastStateChange": 1767225600,
             "lag": 0.012, "outbox": 0, "rejected": 3}
    with_fleet = httpdns.Status.from_json(dict(document_example("status", "running"), fleet=fleet))
    assert with_fleet.fleet == httpdns.FleetStatus(connected=True, state="connected", last_error=None,
                                                   last_state_change=1767225600, lag=0.012, outbox=0, rejected=3)
    with pytest.raises(httpdns.ProtocolError):
        httpdns.Status.from_json(dict(document_example("status", "running"), fleet=dict(fleet, outbox="0")))


# What each method's result is in the client: a class whose typed fields hold the result's
# members, or (for a result of one member) that member's own type, or {member: type} when the
# method returns that member (listCookies returns the list of cookies).
def client_results():
    return {
        "resolve": httpdns.Resolution, "reverse": httpdns.ReverseLookup, "forget": {"forgotten": int},
        "getCookieHeader": httpdns.CookieHeader, "handleSetCookie": httpdns.StoredCookies, "deleteCookies": {"deleted": int},
        "listCookies": {"cookies": list[httpdns.Cookie]}, "importCookies": {"imported": int},
        "exportCookies": httpdns.ExportedCookies, "flushCache": {"flushed": int}, "status": httpdns.Status,
        "showCache": {"entries": list[httpdns.CacheEntry]}, "statistics": httpdns.Statistics,
        "resetStatistics": {"since": int}, "metrics": httpdns.MetricsText, "monitor": httpdns.Monitor,
    }
# Members whose field is named otherwise than the member in snake_case.
RENAMED = {"status.cookies": "cookie_count"}
SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "array": list}


def _unwrap(hint):
    """The type a hint holds: X for X | None; the union's members otherwise."""
    arguments = [a for a in typing.get_args(hint) if a is not type(None)] if typing.get_origin(hint) in (
        typing.Union, types.UnionType) else [hint]
    return arguments


def _hold(schema, hint, path, problems):
    """Checks that ``hint`` is a typed field for ``schema`` (and its members, recursively)."""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    held = _unwrap(hint)
    if "null" in kinds and type(None) not in typing.get_args(hint):
        problems.append(f"{path}: may be null but its field is {hint}")
    [target] = held if len(held) == 1 else [None]
    origin = typing.get_origin(target) or target
    if "object" in kinds and "properties" in schema:
        if not isinstance(target, type) or target is dict:
            problems.append(f"{path}: an object whose field is {hint}, not a typed class")
            return
        fields = typing.get_type_hints(target)
        for name, member in schema["properties"].items():
            field = RENAMED.get(f"{path}.{name}", re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name))
            if field not in fields:
                problems.append(f"{path}.{name}: {target.__name__} has no field {field}")
            elif f"{path}.{name}" not in RENAMED:
                if name not in schema.get("required", []) and type(None) not in typing.get_args(fields[field]) \
                        and typing.get_origin(fields[field]) is not list:
                    problems.append(f"{path}.{name}: may be absent but its field {field} cannot be None")
                _hold(member, fields[field], f"{path}.{name}", problems)
    elif "array" in kinds:
        if origin is not list:
            problems.append(f"{path}: an array whose field is {hint}")
        elif "items" in schema:
            _hold(schema["items"], typing.get_args(target)[0] if typing.get_args(target) else typing.Any,
                  f"{path}[]", problems)
    else:
        wanted = tuple(SCALARS[k] for k in kinds if k != "null")
        if not (isinstance(origin, type) and issubclass(origin, wanted)):
            problems.append(f"{path}: {kinds} in the document, {hint} in the client")


def test_every_result_member_of_the_document_has_a_typed_field():
    with open(os.path.join(ROOT, "rpc-schema", "httpdnsd.openrpc.json")) as f:
        document = json.load(f)
    problems, results = [], client_results()
    for method in document["methods"]:
        name, schema = method["name"], method["result"]["schema"]
        if name == "rpc.discover":
            continue  # the document itself, handed back as the parsed JSON it is
        assert name in results, f"the client's result of {name} is not known to this test"
        held = results[name]
        if isinstance(held, dict):
            assert set(held) == set(schema["properties"]), name
            for member, hint in held.items():
                _hold(schema["properties"][member], hint, f"{name}.{member}", problems)
        else:
            _hold(schema, held, name, problems)
    assert problems == []


def test_upstream_status_reads_routed_domains_and_refuses_mistyped_ones():
    base = {"name": "u", "kind": "doh", "healthy": True, "lastError": None, "latencyMs": None}
    routed = httpdns.UpstreamStatus.from_json(dict(base, answered=3, domains=["corp.example", "."]))
    assert (routed.answered, routed.domains) == (3, ["corp.example", "."])
    for bad in ({"domains": ["a", 1]}, {"domains": "corp.example"}, {"answered": True}, {"answered": "3"}):
        with pytest.raises(httpdns.ProtocolError):
            httpdns.UpstreamStatus.from_json(dict(base, **bad))


def test_resolve_examples_have_typed_ttls_with_family_both_only():
    fresh = httpdns.Resolution.from_json(document_example("resolve", "fresh answer"))
    assert fresh.ttls == httpdns.FamilyTTLs(ipv4=57, ipv6=30)
    assert httpdns.Resolution.from_json(document_example("resolve", "stale from cache")).ttls is None


def test_reverse_example_has_typed_names():
    lookup = httpdns.ReverseLookup.from_json(document_example("reverse", "known address"))
    assert lookup.names == [httpdns.ReverseName(host="api.example.com", ttl=57, remembered_for=86457)]
    assert lookup.names[0]["rememberedFor"] == 86457  # wire names still read
    for names in (None, [{"host": "a.example", "ttl": 1}], [{"host": "a.example", "ttl": "1", "rememberedFor": 2}],
                  [{"host": "a.example", "ttl": 1, "rememberedFor": True}]):
        result = dict(document_example("reverse", "known address"), names=names)
        if names is None:
            del result["names"]
        with pytest.raises(httpdns.ProtocolError):
            httpdns.ReverseLookup.from_json(result)


@pytest.mark.parametrize("arguments, error", [
    ({}, ValueError), ({"address": "127.0.0.2", "all": True}, ValueError), ({"all": False}, ValueError),
    ({"address": 2130706434}, TypeError), ({"all": "yes"}, TypeError), ({"address": "127.0.0.2", "all": 1}, TypeError),
])
def test_forget_refuses_anything_but_exactly_one_before_any_call(tmp_path, arguments, error):
    # No daemon listens here: a call that reached the socket would be DaemonUnavailable instead.
    with httpdns.Client(tmp_path / "no-daemon.sock") as client:
        with pytest.raises(error, match="forget: "):
            client.forget(**arguments)


@pytest.mark.parametrize("member, value", [
    ("ttls", {"ipv4": "57", "ipv6": 30}), ("ttls", {"ipv4": 57}), ("ttls", [57, 30]),
    ("network", {"watching": 1, "changes": 1, "lastChange": None}),
    ("network", {"watching": True, "changes": 1, "lastChange": "1767228900"}),
    ("serviceAddresses", {"source": "boot", "current": "203.0.113.1", "addresses": [{"address": "203.0.113.1"}],
                          "schedulerError": None, "nextRefresh": None}),
])
def test_malformed_new_members_are_protocol_errors(member, value):
    if member == "ttls":
        result = dict(document_example("resolve", "fresh answer"), ttls=value)
        decode = httpdns.Resolution.from_json
    else:
        result = json.loads(json.dumps(document_example("status", "running")))
        if member == "network":
            result["network"] = value
        else:
            result["upstreams"][0]["serviceAddresses"] = value
        decode = httpdns.Status.from_json
    with pytest.raises(httpdns.ProtocolError):
        decode(result)


# -- against the real daemon ---------------------------------------------------------------------

def test_typed_calls(world, daemon):
    answer = daemon.resolve("login.example.test")
    assert answer.host == "login.example.test" and answer.ipv4 == ["127.0.0.2"] and answer.ipv6 == []
    assert answer.source in ("upstream", "cache") and answer.ttl > 0 and not answer.stale
    assert daemon.resolve("login.example.test", family="ipv4", allow_stale=False, timeout_ms=5000).source == "cache"
    assert daemon.reverse("127.0.0.2").hosts[0] == "login.example.test"

    daemon.delete_cookies(domain="typed.example.test")
    stored = daemon.handle_set_cookie("https://typed.example.test/a/b", ["k=v; Path=/", "tracker=1; Domain=com"])
    assert (stored.host, stored.stored) == ("typed.example.test", 1)
    assert [(r.index, r.reason) for r in stored.rejected] == [(1, "public-suffix")]
    assert daemon.get_cookie_header("https://typed.example.test/") == "k=v"
    [cookie] = daemon.list_cookies("typed.example.test")
    assert (cookie.name, cookie.value, cookie.host_only, cookie.expires, cookie.http_only) == (
        "k", "v", True, None, False)
    exported = daemon.export_cookies()
    assert "typed.example.test\tFALSE\t/\tFALSE\t0\tk\tv" in exported
    assert daemon.delete_cookies(url="https://typed.example.test/", name="k") == 1
    assert daemon.import_cookies("typed.example.test\tFALSE\t/\tFALSE\t0\tk\tagain\n") == 1
    assert daemon.get_cookie_header("https://typed.example.test/") == "k=again"
    assert daemon.delete_cookies(domain="typed.example.test") == 1

    # family both: each family's TTL; the answer's ttl is the IPv4 one, the only family with addresses.
    both = daemon.resolve("login.example.test", family="both")
    assert isinstance(both.ttls, httpdns.FamilyTTLs) and both.ttls.ipv4 == both.ttl > 0 and both.ttls.ipv6 >= 0

    status = daemon.status()
    assert status.version and status.uptime >= 0 and status.upstreams[0].kind == "alibaba"
    assert status.raw["cache"]["entries"] >= 1
    # One service address: no serviceAddresses; the network member is always there.
    assert status.upstreams[0].service_addresses is None
    # The world's upstream answered login.example.test at least; no Route= lines, so no domains.
    assert status.upstreams[0].answered == status.raw["upstreams"][0]["answered"] >= 1
    assert status.upstreams[0].domains is None
    assert status.network == httpdns.NetworkStatus(
        status.raw["network"]["watching"], status.raw["network"]["changes"], status.raw["network"]["lastChange"])
    assert isinstance(status.network.watching, bool) and status.network.changes >= 0
    with open(os.path.join(ROOT, "rpc-schema", "httpdnsd.openrpc.json")) as f:
        document = json.load(f)
    assert daemon.discover() == document
    typed = {"resolve", "reverse", "forget", "getCookieHeader", "handleSetCookie", "deleteCookies", "listCookies",
             "importCookies", "exportCookies", "flushCache", "status", "showCache", "statistics",
             "resetStatistics", "metrics", "monitor", "rpc.discover"}
    assert {method["name"] for method in document["methods"]} == typed, "a method has no typed call"


def test_reverse_names_and_forget(world, daemon):
    # A name of its own on an address of its own, so that no other test's names share it.
    world.set_answer("forget-py.example.test", ["127.0.0.7"])
    daemon.resolve("forget-py.example.test")
    lookup = daemon.reverse("127.0.0.7")
    assert lookup.hosts == ["forget-py.example.test"] and [n.host for n in lookup.names] == lookup.hosts
    [name] = lookup.names
    assert 0 < name.ttl <= name.remembered_for and name.ttl == lookup.ttl

    assert daemon.forget("127.0.0.7") == 1
    with pytest.raises(httpdns.RPCError) as raised:
        daemon.reverse("127.0.0.7")
    assert (raised.value.code, raised.value.name) == (-32001, "HostNotFound")
    assert daemon.forget("127.0.0.7") == 0  # nothing left to forget
    with pytest.raises(httpdns.RPCError) as raised:
        daemon.forget("not-an-address")
    assert (raised.value.code, raised.value.field) == (-32602, "address")

    daemon.resolve("forget-py.example.test")
    daemon.resolve("login.example.test")
    assert daemon.forget(all=True) >= 2
    for address in ("127.0.0.7", "127.0.0.2"):
        with pytest.raises(httpdns.RPCError) as raised:
            daemon.reverse(address)
        assert raised.value.code == -32001
    assert daemon.forget(all=True) == 0
    # The cache stays: the name resolves from it, and is remembered again.
    assert daemon.resolve("forget-py.example.test").source == "cache"
    assert daemon.reverse("127.0.0.7").hosts == ["forget-py.example.test"]


def test_observation_calls(world, daemon):
    daemon.resolve("login.example.test")
    entries = daemon.show_cache()
    assert any(e["host"] == "login.example.test" and e["family"] == "ipv4" and e["addresses"] == ["127.0.0.2"]
               for e in entries), entries
    statistics = daemon.statistics()
    assert statistics["cache"]["entries"] >= 1 and statistics["upstreams"]
    since = daemon.reset_statistics()  # the tests run as root, who may reset
    assert since >= statistics["since"] and daemon.statistics()["since"] == since
    text = daemon.metrics()
    assert any(line.startswith("# TYPE ") for line in text.splitlines()), text
    assert text.endswith("\n")
    # The same, typed.
    [entry] = [e for e in daemon.show_cache() if e.host == "login.example.test" and e.family == "ipv4"]
    assert (entry.addresses, entry.stale, isinstance(entry.ttl, int)) == (["127.0.0.2"], False, True)
    typed = daemon.statistics()
    assert typed.since == since and isinstance(typed.cache, httpdns.CacheCounters)
    assert isinstance(typed.cookies.headers, int) and all(isinstance(u.queries, int) for u in typed.upstreams)
    status = daemon.status()
    assert isinstance(status.cache, httpdns.CacheCounters) and status.cache.entries >= 1 and status.fleet is None
    assert text.content_type.startswith("text/plain") and text.text == text
    header = daemon.get_cookie_header("https://login.example.test/")
    assert header.count == len([c for c in header.split("; ") if c])
    exported = daemon.export_cookies()
    assert exported.data == exported and exported.left_out == []


def test_monitor_sees_a_resolve_made_on_another_connection(world, daemon):
    with daemon.monitor() as events:
        with httpdns.Client(daemon.socket_path) as other:
            other.resolve("login.example.test")
        # Bounded wait for the event; other users' or earlier events may come first.
        while (event := events.next(timeout=10)) is not None:
            if event.get("type") == "resolve" and event.get("host") == "login.example.test":
                break
        assert event is not None, "no resolve event within 10 s"
        assert event["uid"] == os.getuid() and isinstance(event["time"], int)
        assert events.scope in ("all", "own") and events.queue_limit >= 1
    for _ in events:  # closed: the iteration ends
        pass


def test_host_is_sent_for_an_ip_url(world, daemon):
    stored = daemon.handle_set_cookie("https://127.0.0.4/x", "ipcookie=1; Path=/", host="py.example.test")
    assert stored.host == "py.example.test"
    assert daemon.get_cookie_header("https://127.0.0.4/", host="py.example.test") == "ipcookie=1"
    assert daemon.get_cookie_header("https://py.example.test/") == "ipcookie=1"
    daemon.delete_cookies(domain="py.example.test")


def test_rpc_errors_carry_code_name_and_data(world, daemon):
    with pytest.raises(httpdns.RPCError) as raised:
        daemon.resolve("nowhere.example.test")
    assert (raised.value.code, raised.value.name, raised.value.data.get("host")) == (
        -32001, "HostNotFound", "nowhere.example.test")
    with pytest.raises(httpdns.RPCError) as raised:
        daemon.resolve("")
    assert (raised.value.code, raised.value.field) == (-32602, "host")
    with pytest.raises(httpdns.RPCError) as raised:
        daemon.call("noSuchMethod")
    assert (raised.value.code, raised.value.name, raised.value.data["method"]) == (
        -32601, "MethodNotFound", "noSuchMethod")


def test_ambiguous_address_is_an_error_with_its_candidates(world, daemon):
    # 127.0.0.4 was handed out to this user for several names.
    daemon.resolve("failover.example.test")
    daemon.resolve("wrongcert.example.test")
    with pytest.raises(httpdns.RPCError) as raised:
        daemon.get_cookie_header("https://127.0.0.4/")
    error = raised.value
    assert (error.code, error.reason, error.field) == (-32602, "ambiguous-address", "host")
    assert {"failover.example.test", "wrongcert.example.test"} <= set(error.candidates)


def test_many_threads_share_one_connection(world, daemon):
    names = ["login.example.test", "app.example.test", "moving.example.test"] * 20
    results = [None] * len(names)

    def resolve(index):
        results[index] = daemon.resolve(names[index]).host

    threads = [threading.Thread(target=resolve, args=(i,)) for i in range(len(names))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == names


def test_async_calls(world, daemon):
    async def main():
        answers = await asyncio.gather(*(daemon.resolve_async(name) for name in
                                         ["login.example.test", "app.example.test"] * 5))
        return [answer.ipv4 for answer in answers]

    assert asyncio.run(main()) == [["127.0.0.2"], ["127.0.0.3"]] * 5


def test_a_forked_child_opens_its_own_connection(world, daemon):
    daemon.status()
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if daemon.resolve("login.example.test").ipv4 == ["127.0.0.2"] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert daemon.status().version
