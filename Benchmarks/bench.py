#!/usr/bin/env python3
"""httpdnsd's benchmark: the daemon against the reference server, in one run on one machine.

.ci/bench builds the programs and runs this script; see Benchmarks/README.md for what is
measured and why. Python 3 standard library only. Everything it starts listens on Unix sockets
or on 127.0.0.1; the daemon's only upstream is the fake HTTPDNS server below.
"""

import argparse
import datetime
import json
import os
import platform
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "templates")

# (title, template file, what every daemon answer must contain)
TEMPLATE_RUNS = [
    ("resolve (cache hit)", "resolve.jsonl", '"source":"cache"'),
    ("getCookieHeader", "getCookieHeader.jsonl", '"count":3'),
    ("getCookieHeader, IP URL + host", "getCookieHeader-ip.jsonl", '"count":3'),
    ("handleSetCookie", "handleSetCookie.jsonl", '"stored":1'),
    ("mixed 2:2:1", "mixed.jsonl", None),
]
SHAPES = [(1, 1), (32, 1), (32, 8)]
# The varied templates (generated per run, see varied_templates): every line another request.
VARIED_LINES = 4000
VARIED_SHAPES = [(1, 1), (32, 8)]
# The methods whose answers wait for a commit: a mix's reads are reported apart from them.
WRITES = ["handleSetCookie"]
# The varied mix (issue 48), fixed by its seed: getCookieHeader by name (varied paths and queries)
# : getCookieHeader of IP URLs with host : resolve of filled names : handleSetCookie with a new
# value = 2:1:1:1, over the 1000 filled sites.
MIX_SEED = 48
MIX_TITLE = "varied mix 2:1:1:1 (get : IP URL + host : resolve : set)"
# What a full run is held to (Benchmarks/README.md); a run is quiet when the 1-minute load
# average is below QUIET_LOAD at its start and at its end.
QUIET_LOAD = 0.5
TARGETS = {
    "mix1x1Ratio": (">=", 0.85),
    "mix32x8Ratio": (">=", 0.3),
    "mixReadsP99At32x8Us": ("<", 1000),
    "coldStartMedianMs": ("<=", 20),
    "coldStartWorstMs": ("<=", 30),
    "rssAfterFillMiB": ("<=", 25),
}


class BenchError(Exception):
    pass


# ---- state the daemon is filled with ------------------------------------------------------

def site_host(site):
    return f"site{site}.example"


def site_cookies(site):
    """The three cookies of a filled site: host-only, domain-wide, and on a sub-path."""
    return [
        f"sid=s{site:04d}x7f3a9c2e; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=2592000",
        f"lang=en-US; Domain={site_host(site)}; Path=/; Max-Age=31536000",
        f"pref=theme-dark-{site}; Path=/app; Max-Age=31536000",
    ]


def request_line(method, params):
    body = json.dumps(params, separators=(",", ":"))
    return '{"jsonrpc":"2.0","id":{{id}},"method":"%s","params":%s}' % (method, body)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return path


def cookie_fill_lines(sites):
    """One handleSetCookie per site, with its three cookies."""
    return [request_line("handleSetCookie", {"url": f"https://{site_host(s)}/", "setCookie": site_cookies(s)})
            for s in range(sites)]


def cookie_range_lines(first, last):
    """One handleSetCookie per cookie, cookies first..last-1 of the sequence site0 sid, lang, pref, site1 ..."""
    return [request_line("handleSetCookie", {"url": f"https://{site_host(k // 3)}/",
                                             "setCookie": [site_cookies(k // 3)[k % 3]]})
            for k in range(first, last)]


def name_fill_lines(names):
    return [request_line("resolve", {"host": f"name{i}.example"}) for i in range(names)]


# ---- real traffic: every request another URL, name or value -------------------------------

def varied_urls(rng, count, sites):
    """`count` distinct (site, path-and-query) pairs over every site: the pages, static files
    and API calls of a site, with query strings, as a browser's or an SDK's requests are."""
    sections = ["", "app/", "app/account/", "static/", "api/v1/", "news/", "search"]
    urls = set()
    while len(urls) < count:
        site = rng.randrange(sites)
        section = rng.choice(sections)
        if section == "search":
            path = f"search?q=term{rng.randrange(100000)}&page={rng.randrange(1, 20)}"
        elif section == "static/":
            path = f"static/{rng.choice(['app', 'vendor', 'site'])}.{rng.randrange(10**6):06x}.{rng.choice(['js', 'css'])}"
        elif section.startswith("api/"):
            path = f"api/v1/items/{rng.randrange(10**6)}?fields=id,name&ts={rng.randrange(10**9)}"
        else:
            path = f"{section}page{rng.randrange(5000)}.html?ref=r{rng.randrange(1000)}"
        urls.add((site, path))
    ordered = sorted(urls)
    rng.shuffle(ordered)
    return ordered


def varied_templates(work, sites, names, lines=VARIED_LINES):
    """The varied templates as files in `work`: (title, path, what every daemon answer must contain)."""
    import random
    rng = random.Random(28)
    get = [request_line("getCookieHeader", {"url": f"https://{site_host(site)}/{path}"})
           for site, path in varied_urls(rng, lines, sites)]
    get_ip = [request_line("getCookieHeader", {"url": f"https://198.18.{rng.randrange(256)}.{rng.randrange(1, 255)}/{path}",
                                               "host": site_host(site)})
              for site, path in varied_urls(rng, lines, sites)]
    hosts = list(range(names))
    rng.shuffle(hosts)
    resolve = [request_line("resolve", {"host": f"name{hosts[k % names]}.example"}) for k in range(max(lines, names))]
    # Each site's session cookie gets another value on each of its lines, and a site has several
    # lines, so every set replaces the value the previous one stored (a rotating token).
    sets = [request_line("handleSetCookie", {
                "url": f"https://{site_host(k % sites)}/{path}",
                "setCookie": [f"sid=t{k:05d}{rng.randrange(16**12):012x}; Path=/; Secure; HttpOnly; SameSite=Lax; "
                              "Max-Age=2592000"]})
            for k, (_, path) in enumerate(varied_urls(rng, lines, sites))]
    files = [(f"varied: getCookieHeader, {lines} URLs over {sites} sites", "varied-get", get, '"header":'),
             (f"varied: getCookieHeader, {lines} IP URLs + host", "varied-get-ip", get_ip, '"header":'),
             (f"varied: resolve (cache hit), {len(resolve)} names", "varied-resolve", resolve, '"source":"cache"'),
             ("varied: handleSetCookie, a new value each time", "varied-set", sets, '"stored":1'),
             (MIX_TITLE, "varied-mix", varied_mix(sites, names, lines), None)]
    return [(title, write_lines(os.path.join(work, name + ".jsonl"), content), expect)
            for title, name, content, expect in files]


def varied_mix(sites, names, lines=VARIED_LINES, seed=MIX_SEED):
    """The varied mix: `lines` lines in groups of get, IP URL + host, get, resolve, set (2:1:1:1),
    every line another request over every filled site. A set's value holds rpcload's {{unique}},
    so it is new on every request, however often the generator goes round the lines. The first
    line is a getCookieHeader, the most frequent kind: the reference server writes its answer."""
    import random
    rng = random.Random(seed)
    groups = lines // 5
    urls = varied_urls(rng, 4 * groups, sites)
    hosts = rng.sample(range(names), min(names, groups))
    mix = []
    for k in range(groups):
        (site_a, path_a), (site_b, path_b), (site_c, path_c), (site_d, path_d) = urls[4 * k:4 * k + 4]
        mix += [
            request_line("getCookieHeader", {"url": f"https://{site_host(site_a)}/{path_a}"}),
            request_line("getCookieHeader", {"url": f"https://198.18.{rng.randrange(256)}.{rng.randrange(1, 255)}/"
                                                    f"{path_b}", "host": site_host(site_b)}),
            request_line("getCookieHeader", {"url": f"https://{site_host(site_c)}/{path_c}"}),
            request_line("resolve", {"host": f"name{hosts[k % len(hosts)]}.example"}),
            request_line("handleSetCookie", {
                "url": f"https://{site_host(site_d)}/{path_d}",
                "setCookie": [f"sid=m{{{{unique}}}}x{rng.randrange(16**8):08x}; Path=/; Secure; HttpOnly; "
                              "SameSite=Lax; Max-Age=2592000"]}),
        ]
    return mix


def check_targets(report):
    """Each target's measured value and whether it held (None when the run did not measure it)."""
    measured = {}
    for cell in report.get("table", []):
        if cell["template"] == MIX_TITLE:
            shape = f"{cell['connections']}x{cell['depth']}"
            measured[f"mix{shape}Ratio"] = cell["ratio"]
            if shape == "32x8":
                measured["mixReadsP99At32x8Us"] = cell["httpdnsd"].get("reads_p99_us")
                measured["mixSetsP99At32x8Us"] = cell["httpdnsd"].get("writes_p99_us")
    cold = report.get("coldStart")
    if cold:
        measured["coldStartMedianMs"] = cold["medianMs"]["httpdnsd"]
        measured["coldStartWorstMs"] = cold["worstMs"]["httpdnsd"]
    if "state" in report:
        measured["rssAfterFillMiB"] = report["state"]["rssMiB"]
    checks = {}
    for name, (op, bound) in TARGETS.items():
        value = measured.get(name)
        held = None if value is None else {">=": value >= bound, "<": value < bound, "<=": value <= bound}[op]
        checks[name] = {"value": value, "target": f"{op} {bound}", "held": held}
    checks["mixSetsP99At32x8Us"] = {"value": measured.get("mixSetsP99At32x8Us"), "target": "reported apart",
                                    "held": None}
    return checks


# ---- the fake HTTPDNS upstream (Alibaba's v1 API) -----------------------------------------

class FakeAlibaba:
    """Answers GET /ACCOUNT/d?host=NAME like Alibaba's HTTPDNS, with one IPv4 and one IPv6
    address per name, unique per name, from the benchmarking and documentation ranges."""

    TTL = 86400

    def __init__(self):
        self.addresses = {}
        self.queries = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: without this, Nagle and the client's
            # delayed ACK hold some answers back 40 ms.
            disable_nagle_algorithm = True

            def do_GET(self):
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if url.path.endswith("/d") and "host" in query:
                    body = fake.answer(query["host"][0])
                elif url.path.endswith("/resolve") and "host" in query:
                    body = {"dns": [fake.answer(h) for h in query["host"][0].split(",")]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, host):
        with self.lock:
            self.queries += 1
            n = self.addresses.setdefault(host, len(self.addresses))
        return {"host": host, "ips": [f"198.19.{n >> 8 & 255}.{n & 255}"], "ipsv6": [f"2001:db8::{n:x}"],
                "ttl": self.TTL, "origin_ttl": self.TTL}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ---- processes ----------------------------------------------------------------------------

def call(path, method, params=None, timeout=30):
    """One JSON-RPC request on a fresh connection; returns the whole response object."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        s.sendall(json.dumps(message).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise BenchError(f"{method}: the server closed the connection")
            data += chunk
    return json.loads(data)


def wait_connectable(path, process, seconds, log=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"{path}: the server exited with status {process.returncode}" + tail(log))
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
                return
        except OSError:
            time.sleep(0.02)
    raise BenchError(f"{path}: nothing listens after {seconds} s" + tail(log))


def tail(log):
    if not log or not os.path.exists(log):
        return ""
    with open(log, encoding="utf-8", errors="replace") as f:
        return "; its log ends:\n" + "".join(f.readlines()[-20:])


def stop(process, seconds=30):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Daemon:
    def __init__(self, binary, work, name, config):
        self.directory = os.path.join(work, name)
        os.makedirs(self.directory)
        self.socket = os.path.join(self.directory, "d.sock")
        self.state = os.path.join(self.directory, "state")
        self.config = os.path.join(self.directory, "httpdnsd.conf")
        self.log = os.path.join(self.directory, "log")
        with open(self.config, "w") as f:
            f.write(config)
        self.binary = binary
        self.process = None

    def start(self):
        env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "--config", self.config, "--socket", self.socket, "--state-dir", self.state],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        wait_connectable(self.socket, self.process, 60, self.log)

    def memory(self):
        """(VmRSS, VmHWM) in MiB."""
        fields = {}
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))

    def stop(self):
        if self.process:
            stop(self.process)
            if self.process.returncode != 0:
                raise BenchError(f"the daemon exited with status {self.process.returncode}" + tail(self.log))


class ReferenceServer:
    def __init__(self, binary, path, result):
        self.socket = path
        self.process = subprocess.Popen([binary, "--socket", path, "--result", result],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        ready, _, _ = select.select([self.process.stdout], [], [], 10)
        if not ready or self.process.stdout.readline().strip() != b"ready":
            stop(self.process)
            raise BenchError("the reference server did not start")

    def stop(self):
        stop(self.process)



def read_line(s):
    """One newline-ended answer from socket s."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            raise BenchError("the socket-activated server closed the connection")
        data += chunk
    return data

class Bench:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="httpdnsd-bench.")
        self.processes = []
        self.report = {"runs": []}

    # -- load generator --

    def load(self, path, templates, connections=1, depth=1, expect=None, once=False, seconds=None):
        command = [self.args.rpcload, "--socket", path, "--templates", templates, "-c", str(connections),
                   "-d", str(depth), "--json", "--writes", ",".join(WRITES)]
        if once or self.args.quick:
            # A smoke run only shows that every part works: each template line once, every answer
            # awaited, so a machine too loaded to answer within a short window cannot fail it.
            command += ["--once", "--timeout", "60"]
        else:
            command += ["--seconds", str(seconds or self.args.seconds), "--warmup", str(self.args.warmup)]
        if expect:
            command += ["--expect", expect]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise BenchError(f"rpcload {' '.join(command[1:])} failed ({done.returncode}):\n"
                             f"{done.stderr.strip()}\n{done.stdout.strip()}")
        return json.loads(done.stdout)

    def fill(self, path, name, lines, connections=1, depth=8, expect=None):
        templates = write_lines(os.path.join(self.work, name + ".jsonl"), lines)
        started = time.monotonic()
        self.load(path, templates, connections, depth, expect=expect, once=True)
        return time.monotonic() - started

    def reference_server(self, name, result):
        server = ReferenceServer(self.args.refserver, os.path.join(self.work, name + ".sock"), result)
        self.processes.append(server)
        return server

    def measure_pair(self, daemon_socket, reference_socket, templates, shape, expect, label):
        """Interleaved runs, alternating which server goes first; medians of each."""
        runs = {"reference": [], "httpdnsd": []}
        for rep in range(self.args.reps):
            order = [("reference", reference_socket, None), ("httpdnsd", daemon_socket, expect)]
            if rep % 2:
                order.reverse()
            for side, path, check in order:
                load_start = os.getloadavg()[0]
                result = self.load(path, templates, shape[0], shape[1], expect=check)
                runs[side].append(result)
                self.report["runs"].append(dict(result, server=side, template=label, connections=shape[0],
                                                depth=shape[1], loadStart=load_start, loadEnd=os.getloadavg()[0]))
        cell = {"template": label, "connections": shape[0], "depth": shape[1]}
        for side, results in runs.items():
            cell[side] = {"rps": statistics.median(r["rps"] for r in results),
                          "p99_us": statistics.median(r["latency_us"]["p99"] for r in results)}
            for kind in ("reads", "writes"):
                if all(r[kind + "_latency_us"]["count"] for r in results):
                    cell[side][kind + "_p99_us"] = statistics.median(r[kind + "_latency_us"]["p99"] for r in results)
        cell["ratio"] = cell["httpdnsd"]["rps"] / cell["reference"]["rps"]
        return cell

    # -- the parts of a run --

    def machine(self):
        model = "unknown CPU"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(),
                "load": os.getloadavg()[0], "daemon": self.args.daemon}

    def main_config(self, upstream_port):
        return ("[Resolver]\n"
                f"Upstream=alibaba http://127.0.0.1:{upstream_port}/100000\n"
                f"CacheSize={max(4096, 4 * self.args.names)}\n"
                "Timeout=10s\n"
                # The fill resolves every name as one user, as fast as it can.
                "UpstreamQueryRatePerUser=1000000\nUpstreamQueryBurstPerUser=1000000\n"
                "[Server]\nIdleExit=0\n")

    def run(self):
        a = self.args
        machine = self.machine()
        self.report["machine"] = machine
        print(f"httpdnsd benchmark, {machine['date']}: {machine['cpus']} x {machine['cpu']}, "
              f"Linux {machine['kernel']}, load {machine['load']:.2f} at start")
        print(f"daemon: {a.daemon}")
        upstream = FakeAlibaba()
        try:
            self.run_fill(upstream)
            if "matrix" in a.parts:
                self.run_matrix()
            # Stopping writes the state that the cold starts load; the disk is given the matrix's
            # writes first, so that the cold starts do not wait behind their writeback.
            self.daemon.stop()
            os.sync()
            if "cold" in a.parts:
                self.run_cold_start()
            if "scaling" in a.parts:
                self.run_scaling(upstream)
        finally:
            upstream.close()
        self.report["upstreamQueries"] = upstream.queries
        end = os.getloadavg()[0]
        self.report["load"] = {"start": machine["load"], "end": end, "quiet": max(machine["load"], end) < QUIET_LOAD}
        self.report["targets"] = check_targets(self.report)
        print(f"\nload {machine['load']:.2f} at start, {end:.2f} at end: "
              + ("quiet" if self.report["load"]["quiet"] else f"not quiet (>= {QUIET_LOAD}), figures are not the targets'"))
        if a.quick:
            print("targets: not checked (a smoke run's figures only show that each part works)")
            self.report["targets"] = {name: dict(check, held=None) for name, check in self.report["targets"].items()}
        else:
            print("targets: " + "; ".join(
                f"{name} {format_value(check['value'])} ({check['target']}"
                + ("" if check["held"] is None else ", held" if check["held"] else ", MISSED") + ")"
                for name, check in self.report["targets"].items()))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(self.report, f, indent=1)
            print(f"\nevery run, as JSON: {a.json}")

    def run_fill(self, upstream):
        a = self.args
        self.daemon = Daemon(a.daemon, self.work, "main", self.main_config(upstream.port))
        self.daemon.start()
        seconds = self.fill(self.daemon.socket, "fill-cookies", cookie_fill_lines(a.sites), expect='"stored":3')
        seconds += self.fill(self.daemon.socket, "fill-names", name_fill_lines(a.names), connections=4,
                             expect='"source":"upstream"')
        status = call(self.daemon.socket, "status")["result"]
        rss, peak = self.daemon.memory()
        self.report["state"] = {"cookies": status["cookies"]["count"], "cacheEntries": status["cache"]["entries"],
                                "fillSeconds": seconds, "rssMiB": rss}
        print(f"state: {status['cookies']['count']} cookies ({a.sites} sites x 3) in uid {os.getuid()}'s jar, "
              f"{status['cache']['entries']} cache entries ({a.names} names x 2 families); filled in {seconds:.1f} s; "
              f"daemon RSS {rss:.1f} MiB")

    def run_matrix(self):
        a = self.args
        rss = self.report["state"]["rssMiB"]
        print(f"runs: {a.seconds:g} s measured after {a.warmup:g} s warm-up, median of {a.reps}, "
              "the reference server and httpdnsd interleaved\n")

        runs = [] if a.varied_only else [(label, os.path.join(TEMPLATES, template), expect, SHAPES)
                                         for label, template, expect in TEMPLATE_RUNS]
        runs += [(label, path, expect, VARIED_SHAPES)
                 for label, path, expect in varied_templates(self.work, a.sites, a.names, a.varied_lines)]
        references = {}
        for label, path, _, _ in runs:
            with open(path, encoding="utf-8") as f:
                first = next(line for line in f.read().split("\n") if line and not line.startswith("#"))
            request = json.loads(first.replace("{{id}}", "1"))
            # The reference server writes the daemon's own answer, so both write the same bytes.
            answer = call(self.daemon.socket, request["method"], request["params"])
            if "result" not in answer:
                raise BenchError(f"{path}: the daemon answered {answer}")
            references[label] = self.reference_server(os.path.basename(path),
                                                      json.dumps(answer["result"], separators=(",", ":")))

        cells = []
        print("| template | conns x depth | reference req/s | httpdnsd req/s | ratio | reference p99 | httpdnsd p99 |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for label, path, expect, shapes in runs:
            for shape in shapes:
                cell = self.measure_pair(self.daemon.socket, references[label].socket, path, shape, expect, label)
                cells.append(cell)
                print(f"| {label} | {shape[0]}x{shape[1]} | {cell['reference']['rps']:,.0f} | "
                      f"{cell['httpdnsd']['rps']:,.0f} | {cell['ratio']:.2f} | "
                      f"{format_us(cell['reference']['p99_us'])} | {format_us(cell['httpdnsd']['p99_us'])} |",
                      flush=True)
        self.report["table"] = cells
        # What a set that changes a value costs against a lookup, where both run flat out.
        def rps(label, shape):
            return next(c["httpdnsd"]["rps"] for c in cells
                        if c["template"] == label and (c["connections"], c["depth"]) == shape)
        lookup, change = runs[-5][0], runs[-2][0]
        cost = rps(lookup, (32, 8)) / rps(change, (32, 8))
        self.report["setCostInLookups"] = cost
        print(f"\na set that changes a value costs {cost:.2f} lookups at 32x8 ({change} against {lookup})")
        # The reads' own p99 at 32x8 (a mix's sets wait for their commit; its reads do not).
        reads = [(c["template"], c["httpdnsd"]["reads_p99_us"], c["httpdnsd"].get("writes_p99_us")) for c in cells
                 if (c["connections"], c["depth"]) == (32, 8) and "reads_p99_us" in c["httpdnsd"]]
        self.report["readP99At32x8"] = {label: us for label, us, _ in reads}
        print("read p99 at 32x8 (the sets of a mix apart): " + "; ".join(
            f"{label} {format_us(us)}" + (f" (its sets {format_us(sets)})" if sets is not None else "")
            for label, us, sets in reads if label.startswith("varied") or "mixed" in label))
        for server in references.values():
            server.stop()

        rss_after, peak = self.daemon.memory()
        status = call(self.daemon.socket, "status")["result"]
        self.report["memory"] = {"rssAfterFillMiB": rss, "rssAfterRunsMiB": rss_after, "peakMiB": peak}
        print(f"\ndaemon memory with that state: RSS {rss:.1f} MiB after filling, {rss_after:.1f} MiB after the "
              f"runs (peak {peak:.1f} MiB); jar {status['cookies']['count']} cookies, "
              f"cache {status['cache']['entries']} entries")

    def cold_start_once(self, command, path, request, expect, state_request=None):
        """Milliseconds from connect() to the first answer of a server socket-activated on connect."""
        if os.path.exists(path):
            os.unlink(path)
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(path):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise BenchError("systemd-socket-activate did not bind " + path)
                time.sleep(0.005)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            while True:  # the path appears at bind(), a moment before listen()
                started = time.monotonic()
                try:
                    s.connect(path)
                    break
                except ConnectionRefusedError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.001)
            s.sendall(request)
            data = read_line(s)
            elapsed = (time.monotonic() - started) * 1000
            if expect.encode() not in data:
                raise BenchError(f"cold start answered {data[:300]!r}, expected {expect}")
            loaded = None
            if state_request:  # what the started process holds, asked after the timed answer
                s.sendall(state_request)
                data = read_line(s)
                status = json.loads(data)["result"]
                loaded = {"cookies": status["cookies"]["count"], "cacheEntries": status["cache"]["entries"]}
            s.close()
            return elapsed, loaded
        finally:
            stop(process)

    def run_cold_start(self):
        a = self.args
        activate = shutil.which("systemd-socket-activate")
        if not activate:
            raise BenchError("systemd-socket-activate is needed (Debian package systemd)")
        d = self.daemon
        path = os.path.join(self.work, "activated.sock")
        # A request that needs the loaded jar: the three cookies of a filled site.
        request = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "getCookieHeader",
                               "params": {"url": f"https://{site_host(3)}/app/page"}}) + "\n").encode()
        daemon_command = [activate, "-l", path, "-E", "SWIFT_BACKTRACE=enable=no", d.binary, "--config",
                          d.config, "--state-dir", d.state]
        reference_command = [activate, "-l", path, a.refserver, "--result", '{"header":"","count":3}']
        status_request = b'{"jsonrpc":"2.0","id":2,"method":"status","params":{}}\n'
        times = {"httpdnsd": [], "reference": []}
        loaded = []
        for _ in range(a.cold_starts):
            elapsed, state = self.cold_start_once(daemon_command, path, request, '"count":3', status_request)
            times["httpdnsd"].append(elapsed)
            loaded.append(state)
            times["reference"].append(self.cold_start_once(reference_command, path, request, '"count":3')[0])
        medians = {k: statistics.median(v) for k, v in times.items()}
        worst = {k: max(v) for k, v in times.items()}
        self.report["coldStart"] = {"runs": times, "medianMs": medians, "worstMs": worst, "stateLoaded": loaded}
        print(f"cold start under systemd-socket-activate, connect to the first answer (getCookieHeader of a "
              f"filled site, state loaded: {loaded[0]['cookies']} cookies, {loaded[0]['cacheEntries']} cache "
              f"entries), median of {a.cold_starts}: httpdnsd {medians['httpdnsd']:.1f} ms, worst "
              f"{worst['httpdnsd']:.1f} ms (each: {', '.join(f'{t:.1f}' for t in times['httpdnsd'])}); "
              f"reference server {medians['reference']:.1f} ms")

    def run_scaling(self, upstream):
        """getCookieHeader of the same sites while the jar grows, cookies spread 3 per site."""
        a = self.args
        config = self.main_config(upstream.port) + f"[Cookies]\nMaxTotal={max(a.jar_sizes) + 1000}\n"
        daemon = Daemon(a.daemon, self.work, "scaling", config)
        daemon.start()
        self.processes.append(daemon)
        lookups = write_lines(os.path.join(self.work, "scaling-get.jsonl"),
                              [request_line("getCookieHeader", {"url": f"https://{site_host(s)}/app/page?q=1"})
                               for s in range(8)])
        reference = self.reference_server("scaling-reference", json.dumps({"header": "", "count": 3}))
        print(f"\ngetCookieHeader of 8 sites (3 cookies each) while the jar grows (3 cookies per site; "
              f"[Cookies] MaxTotal= raised to {max(a.jar_sizes) + 1000}):\n")
        print("| cookies in the jar | conns x depth | httpdnsd req/s | vs. smallest jar | ratio to reference | "
              "httpdnsd p99 |")
        print("| ---: | --- | ---: | ---: | ---: | ---: |")
        filled, rows, smallest = 0, [], {}
        for size in sorted(a.jar_sizes):
            self.fill(daemon.socket, f"scaling-fill-{size}", cookie_range_lines(filled, size), expect='"stored":1')
            filled = size
            count = call(daemon.socket, "status")["result"]["cookies"]["count"]
            for shape in [(1, 1), (32, 8)]:
                cell = self.measure_pair(daemon.socket, reference.socket, lookups, shape, '"count":3',
                                         f"getCookieHeader at {count} cookies")
                smallest.setdefault(shape, cell["httpdnsd"]["rps"])
                vs = cell["httpdnsd"]["rps"] / smallest[shape]
                rows.append(dict(cell, cookies=count, vsSmallest=vs))
                print(f"| {count} | {shape[0]}x{shape[1]} | {cell['httpdnsd']['rps']:,.0f} | {vs:.2f} | "
                      f"{cell['ratio']:.2f} | {format_us(cell['httpdnsd']['p99_us'])} |", flush=True)
        self.report["scaling"] = rows
        reference.stop()
        daemon.stop()

    def cleanup(self):
        for p in reversed(self.processes):
            try:
                p.stop()
            except BenchError:
                pass
        if getattr(self, "daemon", None) and self.daemon.process and self.daemon.process.poll() is None:
            stop(self.daemon.process)
        if self.args.keep:
            print(f"work directory kept: {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def format_us(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} us"


def format_value(value):
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--daemon", required=True, help="the httpdnsd binary")
    p.add_argument("--rpcload", required=True, help="the load generator binary")
    p.add_argument("--refserver", required=True, help="the reference server binary")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run of every part in seconds (one repetition, short runs, small fill)")
    p.add_argument("--reps", type=int, help="repetitions per cell (default 3)")
    p.add_argument("--seconds", type=float, help="measured seconds per run (default 2)")
    p.add_argument("--warmup", type=float, help="unmeasured seconds before each run (default 0.5)")
    p.add_argument("--json", metavar="FILE", help="write every run and the tables as JSON to FILE")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, state)")
    p.add_argument("--parts", default="matrix,cold,scaling",
                   help="what to measure after filling, comma-separated (default matrix,cold,scaling)")
    p.add_argument("--varied-only", action="store_true", help="the matrix of the varied templates only")
    p.add_argument("--cold-starts", type=int, help="cold starts to take the median of (default 5)")
    p.add_argument("--series", type=int, metavar="N",
                   help="N consecutive runs, none discarded, each one's JSON kept in --json-dir")
    p.add_argument("--json-dir", default=os.path.join(HERE, "runs"),
                   help="where --series writes each run's JSON (default Benchmarks/runs)")
    a = p.parse_args()
    quick = a.quick
    a.reps = a.reps or (1 if quick else 3)
    a.seconds = a.seconds or (0.2 if quick else 2.0)
    a.warmup = a.warmup if a.warmup is not None else (0.05 if quick else 0.5)
    # The templates use sites up to 998 and names up to 299 (see templates/).
    a.sites = 1000
    a.names = 300 if quick else 10000
    a.varied_lines = 1000 if quick else VARIED_LINES
    a.jar_sizes = [100, 1000] if quick else [100, 3000, 30000]
    a.cold_starts = a.cold_starts or (1 if quick else 5)
    a.parts = set(a.parts.split(","))
    if not a.parts <= {"matrix", "cold", "scaling"}:
        p.error("--parts: matrix, cold, scaling")
    if not a.series:
        return run_once(a)
    os.makedirs(a.json_dir, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%MZ")
    paths, status = [], 0
    for k in range(1, a.series + 1):
        a.json = os.path.join(a.json_dir, f"{started}-run{k}of{a.series}.json")
        print(f"\n==== run {k} of {a.series} ({a.json}) ====\n", flush=True)
        status |= run_once(a)
        paths.append(a.json)
    summarize_series(paths)
    return status


def run_once(a):
    bench = Bench(a)
    try:
        bench.run()
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        bench.args.keep = True
        if a.json:  # a failed run is kept too, with what it measured
            bench.report["error"] = str(e)
            with open(a.json, "w") as f:
                json.dump(bench.report, f, indent=1)
        return 1
    finally:
        bench.cleanup()
    return 0


def summarize_series(paths):
    """Each target in each run of a series, side by side."""
    reports = []
    for path in paths:
        with open(path) as f:
            reports.append(json.load(f))
    print(f"\n{len(reports)} consecutive runs:\n")
    print("| | " + " | ".join(f"run {k}" for k in range(1, len(reports) + 1)) + " | target |")
    print("| --- |" + " ---: |" * len(reports) + " ---: |")
    load = ["-" if "load" not in r else f"{r['load']['start']:.2f} / {r['load']['end']:.2f}"
            + ("" if r["load"]["quiet"] else " (not quiet)") for r in reports]
    print("| load at start / end | " + " | ".join(load) + f" | < {QUIET_LOAD} |")
    for name in list(TARGETS) + ["mixSetsP99At32x8Us"]:
        cells = []
        for r in reports:
            check = r.get("targets", {}).get(name, {})
            cells.append(format_value(check.get("value")) + (" MISSED" if check.get("held") is False else ""))
        target = TARGETS[name][0] + " " + str(TARGETS[name][1]) if name in TARGETS else "apart"
        print(f"| {name} | " + " | ".join(cells) + f" | {target} |")


if __name__ == "__main__":
    sys.exit(main())
