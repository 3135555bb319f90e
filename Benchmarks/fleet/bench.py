#!/usr/bin/env python3
"""Benchmarks/fleet/bench.py [--names N] [--changes N] [--daemon PATH]

The fleet tier, measured by hand for the README (not a test: nothing is asserted). It starts
Debian's redis-server on a Unix socket in a temporary directory (no persistence), a fake
Alibaba HTTPDNS upstream on 127.0.0.1 that answers every name at once and counts the queries,
and release daemons with their own sockets and state directories; nothing leaves 127.0.0.0/8.

1. Latency of one resolve, p50/p90/p99 over N names each (one client, one request at a time):
   a local cache hit; a fleet hit (another daemon resolved the name); an upstream query through
   the fleet (a miss everywhere: fleet lookup, lock, upstream, publish); an upstream query by a
   daemon without [Fleet].
2. Replication lag of N cookie changes made one after another on daemon A: from A's
   acknowledgement to the first getCookieHeader on B (polled without pause) that returns it.
3. Upstream queries when three daemons resolve the same N names at the same time (one client
   thread per daemon, same order), with ShareCache=yes and with ShareCache=no.
"""
import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
KEY = "6d1f9a3c5e7b0d2f4a6c8e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d1f"

# The main benchmark's fake upstream and daemon process (Benchmarks/bench.py).
_spec = importlib.util.spec_from_file_location("httpdnsd_bench", os.path.join(os.path.dirname(HERE), "bench.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)


class Client:
    """One connection to a daemon: a JSON-RPC request per line, one at a time."""

    def __init__(self, path):
        for _ in range(200):
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"cannot connect to {path}")
        self.buffer = b""
        self.id = 0

    def call(self, method, params):
        self.id += 1
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                      "params": params}).encode() + b"\n")
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the daemon closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{method} {params}: {reply['error']}")
        return reply["result"]


class Bench:
    def __init__(self, daemon):
        self.binary = daemon
        self.work = tempfile.mkdtemp(prefix="fleet-bench.")
        self.daemons = []
        self.upstream = common.FakeAlibaba()
        self.upstream_url = f"http://127.0.0.1:{self.upstream.port}/100000"
        self.redis_socket = os.path.join(self.work, "redis.sock")
        self.redis = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.redis_socket, "--unixsocketperm", "700",
             "--dir", self.work, "--save", "", "--appendonly", "no", "--logfile", os.path.join(self.work, "redis.log")])
        for _ in range(200):
            if os.path.exists(self.redis_socket):
                break
            time.sleep(0.05)
        self.key = os.path.join(self.work, "fleet.key")
        with open(self.key, "w") as f:
            f.write(KEY + "\n")
        os.chmod(self.key, 0o600)

    def start(self, fleet=True, share_cache=True):
        """A daemon on its own socket and state directory; returns a client."""
        config = (f"[Resolver]\nUpstream=alibaba {self.upstream_url}\nCacheSize=100000\n"
                  "MaxUpstreamQueries=4096\nMaxUpstreamQueriesPerUser=4096\n"
                  "UpstreamQueryRatePerUser=1000000\nUpstreamQueryBurstPerUser=1000000\n")
        if fleet:
            config += (f"[Fleet]\nRedis=unix:{self.redis_socket}\nName=bench\nKeyFile={self.key}\n"
                       f"ShareCache={'yes' if share_cache else 'no'}\nShareCookiesOf={os.getuid()}\n")
        daemon = common.Daemon(self.binary, self.work, f"d{len(self.daemons) + 1}", config)
        self.daemons.append(daemon)
        daemon.start()
        client = Client(daemon.socket)
        if fleet:
            for _ in range(500):
                if client.call("status", {}).get("fleet", {}).get("connected"):
                    break
                time.sleep(0.01)
        return client

    def queries(self):
        """Upstream queries since the last call."""
        with self.upstream.lock:
            count, self.upstream.queries = self.upstream.queries, 0
        return count

    def close(self):
        for daemon in self.daemons:
            daemon.stop()
        common.stop(self.redis)
        self.upstream.close()
        shutil.rmtree(self.work, ignore_errors=True)


def percentiles(samples):
    ordered = sorted(samples)

    def at(p):
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1e6

    return at(50), at(90), at(99)


def timed(call, method, params):
    start = time.perf_counter()
    result = call(method, params)
    return time.perf_counter() - start, result


def latency(bench, names):
    a, b = bench.start(), bench.start()
    plain = bench.start(fleet=False)
    rows = {"upstream query through the fleet": [], "fleet hit": [], "local cache hit": [],
            "upstream query, no fleet": []}
    # In this order for each name: A misses everywhere, B finds A's answer in the fleet, then in
    # its own cache; the daemon without a fleet asks the upstream.
    steps = [("upstream query through the fleet", a, "upstream"), ("fleet hit", b, "fleet"),
             ("local cache hit", b, "cache"), ("upstream query, no fleet", plain, "upstream")]
    for i in range(names):
        for label, client, source in steps:
            seconds, result = timed(client.call, "resolve", {"host": f"lat{i}.example", "family": "ipv4"})
            assert result["source"] == source, (label, result)
            rows[label].append(seconds)
    print(f"\n1. resolve latency, {names} names (us)")
    print("| answer | p50 | p90 | p99 |\n| --- | --- | --- | --- |")
    for label in ("local cache hit", "fleet hit", "upstream query through the fleet", "upstream query, no fleet"):
        p50, p90, p99 = percentiles(rows[label])
        print(f"| {label} | {p50:.0f} | {p90:.0f} | {p99:.0f} |")


def replication_lag(bench, changes):
    a, b = bench.start(), bench.start()
    lags = []
    url = "https://login.example/"
    for i in range(changes):
        a.call("handleSetCookie", {"url": url, "setCookie": [f"sid=v{i}; Path=/; Max-Age=3600"]})
        acknowledged = time.perf_counter()
        expected = f"sid=v{i}"
        deadline = acknowledged + 30
        while b.call("getCookieHeader", {"url": url})["header"] != expected:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"change {i} never reached B")
        lags.append(time.perf_counter() - acknowledged)
    p50, p90, p99 = percentiles(lags)
    print(f"\n2. replication lag, {changes} changes on A, read on B (ms)")
    print(f"p50 {p50 / 1000:.2f}, p90 {p90 / 1000:.2f}, p99 {p99 / 1000:.2f}, max {max(lags) * 1000:.2f}")


def upstream_queries(bench, names):
    print(f"\n3. upstream queries, 3 daemons resolving the same {names} names at the same time")
    print("| ShareCache= | upstream queries | per name |\n| --- | --- | --- |")
    for share in (True, False):
        clients = [bench.start(share_cache=share) for _ in range(3)]
        prefix = "shared" if share else "unshared"
        bench.queries()
        barrier = threading.Barrier(3)

        def run(client):
            barrier.wait()
            for i in range(names):
                client.call("resolve", {"host": f"{prefix}{i}.example", "family": "ipv4"})

        threads = [threading.Thread(target=run, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        count = bench.queries()
        print(f"| {'yes' if share else 'no'} | {count} | {count / names:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--daemon", help="httpdnsd to run (default: the release build, built if needed)")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("bench.py: redis-server is needed (apt-get install redis-server)")
    daemon = args.daemon
    if daemon is None:
        subprocess.run(["swift", "build", "--package-path", TOP, "-c", "release", "--product", "httpdnsd"],
                       check=True, stdout=sys.stderr)
        daemon = os.path.join(subprocess.run(
            ["swift", "build", "--package-path", TOP, "-c", "release", "--show-bin-path"],
            check=True, capture_output=True, text=True).stdout.strip(), "httpdnsd")
    bench = Bench(daemon)
    try:
        print(f"fleet bench {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, daemon {daemon}")
        latency(bench, args.names)
        replication_lag(bench, args.changes)
        upstream_queries(bench, args.names)
    finally:
        bench.close()


if __name__ == "__main__":
    main()
