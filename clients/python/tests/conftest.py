"""Fixtures of the Python client's tests.

The integration tests need the world of clients/testing/fixture.py and a daemon configured with
its upstream, in the fixture's network namespace: HTTPDNS_FIXTURE names its fixture.json and
HTTPDNSD_SOCKET the daemon's socket (.ci/test sets both). Without them those tests are skipped;
the protocol tests against a fake daemon run anyway.
"""

import json
import os
import socket
import time
import urllib.parse

import pytest

import httpdns

# The tests name their CA and proxies themselves: a CA bundle or proxy from the environment
# (requests prefers REQUESTS_CA_BUNDLE to a session's own verify=) must not change them.
for _name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "http_proxy", "https_proxy",
              "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
    os.environ.pop(_name, None)


class World:
    """What fixture.json says, and helpers over it."""

    def __init__(self, description, socket):
        self.__dict__.update(description)
        self.socket = socket

    def url(self, host, path, scheme="https"):
        port = self.httpsPort if scheme == "https" else self.httpPort
        return f"{scheme}://{host}:{port}{path}"

    def netloc(self, host, scheme="https"):
        return f"{host}:{self.httpsPort if scheme == 'https' else self.httpPort}"

    def requests_with(self, token):
        """The origins' records of requests whose path holds ``token``, in order."""
        with open(self.records) as f:
            entries = [json.loads(line) for line in f if line.strip()]
        return [e for e in entries if token in e["path"]]

    def proxied(self, token):
        with open(self.proxyLog) as f:
            return [json.loads(line) for line in f if token in line]

    def set_answer(self, host, answer):
        """Makes the upstream answer ``answer`` (addresses, or {"ips": [...], "ttl": seconds}) for ``host``."""
        with open(self.answers) as f:
            answers = json.load(f)
        answers[host] = answer
        temporary = self.answers + ".tmp"
        with open(temporary, "w") as f:
            json.dump(answers, f)
        os.replace(temporary, self.answers)

    def move(self, host, addresses):
        """Makes the upstream answer ``addresses`` for ``host`` and flushes the daemon's cache."""
        self.set_answer(host, addresses)
        with httpdns.Client(self.socket) as client:
            client.flush_cache(host)

    def stale_then_moved(self, host, dead="127.0.0.9", alive="127.0.0.4"):
        """Leaves the daemon holding an expired answer ``dead`` for ``host`` (nothing listens
        there) while the upstream now answers ``alive``."""
        self.set_answer(host, {"ips": [dead], "ttl": 1})
        with httpdns.Client(self.socket) as client:
            client.flush_cache(host)
            assert client.resolve(host).addresses == [dead]
            time.sleep(1.6)  # past the TTL: the next resolve answers stale:true at once
            [entry] = [e for e in client.show_cache() if e["host"] == host and e["family"] == "ipv4"]
            assert (entry["addresses"], entry["ttl"]) == ([dead], 0)
        self.set_answer(host, [alive])

    @staticmethod
    def query(value):
        return urllib.parse.quote(value, safe="")


@pytest.fixture(scope="session")
def world():
    path = os.environ.get("HTTPDNS_FIXTURE")
    socket = os.environ.get("HTTPDNSD_SOCKET")
    if not path or not socket:
        pytest.skip("needs HTTPDNS_FIXTURE and HTTPDNSD_SOCKET (.ci/test runs these with a daemon)")
    with open(path) as f:
        return World(json.load(f), socket)


@pytest.fixture
def daemon(world):
    with httpdns.Client(world.socket) as client:
        yield client


@pytest.fixture
def token(request):
    """A path prefix unique to the test, to find its requests in the origins' records."""
    return "/" + request.node.name.replace("[", "-").replace("]", "") + "-" + os.urandom(3).hex()


@pytest.fixture
def black_hole(world):
    """An address where connections to the origins' HTTP port time out: a listener whose accept
    queue is full, so the kernel drops every further SYN (the fixture's namespace is loopback only)."""
    listener = socket.socket()
    listener.bind(("127.0.0.10", world.httpPort))
    listener.listen(0)
    filler = socket.create_connection(("127.0.0.10", world.httpPort), timeout=5)
    probe = socket.socket()
    probe.settimeout(0.3)
    with pytest.raises(TimeoutError):
        probe.connect(("127.0.0.10", world.httpPort))
    probe.close()
    yield "127.0.0.10"
    filler.close()
    listener.close()
