#!/usr/bin/env python3
"""The world the client tests run in: a fake HTTPDNS upstream, origin servers and a proxy.

    fixture.py --dir DIR [--loopback-up]

Everything listens on loopback only; the tests run it in a private network namespace
(``unshare -n``, then --loopback-up) where nothing but loopback exists, so no client that
bypassed the daemon could look a name up or reach anything outside the machine. Standard
library only, plus ``openssl`` for a throwaway CA.

- **Upstream**: Alibaba HTTPDNS v1 (``GET /100000/d?host=NAME&query=4,6``) on 127.0.0.1. Its
  answers are read from DIR/answers.json at every query (``{"NAME": ["ADDRESS", ...]}``, TTL
  300, or ``{"NAME": {"ips": ["ADDRESS", ...], "ttl": SECONDS}}`` for another TTL), so a test
  changes where a host lives by rewriting that file (`set_answers`) and then flushing the
  daemon's cache, or by letting a short TTL run out. A name it does not list has no address.
- **Origins**: every address in ORIGINS serves HTTP and HTTPS, on the same two ports on every
  address, with one certificate for every name in NAMES_IN_CERTIFICATE (and no IP address), so
  a host that moves keeps its URL and a client that checked the certificate against the IP
  would fail. 127.0.0.1 is an origin too, as ``localhost`` (for clients that look names up
  themselves, such as urllib). Each request is appended to DIR/requests.log as one JSON object: the address and
  port that took it (``server``, ``port``), the client's ``peer`` address and port, ``scheme``,
  the TLS ``sni``, ``method``, ``path``, ``host``, ``cookie``, ``contentType``, ``body``.
  Paths (any prefix, so tests keep their requests apart):
    .../echo        200, the request's record as JSON
    .../login       POST user=NAME: Set-Cookie sid=NAME; Path=/; Secure; HttpOnly (Domain= from
                    ?domain=), 302 to ?next=
    .../redirect    ?status=N&to=URL[&cookie=NAME=VALUE]: status N, Location: URL (and that cookie)
    .../set         ?cookie=VALUE (repeatable): 200 with one Set-Cookie per value
    .../stream      ?chunks=N: N chunks of "chunk K\\n", chunked
    .../notfound    404
- **Proxy**: a forward HTTP proxy on 127.0.0.1 (absolute-form requests and CONNECT), which
  finds origins through answers.json and logs each request line to DIR/proxy.log.

DIR/fixture.json says where everything is, and DIR/httpdnsd.conf is a daemon configuration
whose only upstream is the fake one. The fixture runs until killed.
"""
import argparse
import fcntl
import http.server
import json
import os
import select
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import urllib.parse

LOCK = threading.Lock()
ACCOUNT = "100000"
# Where each name lives at the start. failover.example.test lists first an address where
# nothing listens; wrongcert.example.test is served but is not in the certificate.
HOSTS = {
    "login.example.test": ["127.0.0.2"],
    "app.example.test": ["127.0.0.3"],
    "failover.example.test": ["127.0.0.9", "127.0.0.4"],
    "moving.example.test": ["127.0.0.5"],
    "wrongcert.example.test": ["127.0.0.4"],
    "py.example.test": ["127.0.0.4"],
    "go.example.test": ["127.0.0.4"],
    "node.example.test": ["127.0.0.4"],
}
ORIGINS = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"]
NAMES_IN_CERTIFICATE = [name for name in HOSTS if name != "wrongcert.example.test"] + ["localhost"]


def bring_loopback_up():
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def make_pki(directory):
    """A CA and one server certificate for NAMES_IN_CERTIFICATE; returns (ca, cert, key)."""
    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], check=True, capture_output=True)

    ca, ca_key = os.path.join(directory, "ca.pem"), os.path.join(directory, "ca.key")
    cert, key = os.path.join(directory, "origin.pem"), os.path.join(directory, "origin.key")
    csr, ext = os.path.join(directory, "origin.csr"), os.path.join(directory, "origin.ext")
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *curve, "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=httpdns client test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(ext, "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + name for name in NAMES_IN_CERTIFICATE) + "\n"
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-new", *curve, "-keyout", key, "-out", csr, "-subj", "/CN=origin.example.test")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
            "-extfile", ext)
    return ca, cert, key


def read_answers(path):
    with open(path) as f:
        return json.load(f)


def set_answers(directory, changes):
    """Rewrites DIR/answers.json atomically with ``changes`` ({name: [addresses], {"ips": [addresses],
    "ttl": seconds} or None})."""
    path = os.path.join(directory, "answers.json")
    with LOCK:
        answers = read_answers(path)
        for name, addresses in changes.items():
            if addresses is None:
                answers.pop(name, None)
            else:
                answers[name] = addresses
        temporary = path + ".tmp"
        with open(temporary, "w") as f:
            json.dump(answers, f)
        os.replace(temporary, path)


def append(path, entry):
    with LOCK, open(path, "a") as log:
        log.write(json.dumps(entry) + "\n")


def upstream_handler(answers_path):
    class Upstream(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            host = query.get("host", [""])[0].lower()
            families = query.get("query", ["4"])[0].split(",")
            answer = read_answers(answers_path).get(host, [])
            addresses, ttl = (answer["ips"], answer["ttl"]) if isinstance(answer, dict) else (answer, 300)
            body = json.dumps({
                "host": host,
                "ips": [a for a in addresses if ":" not in a] if "4" in families else [],
                "ipsv6": [a for a in addresses if ":" in a] if "6" in families else [],
                "ttl": ttl, "origin_ttl": ttl,
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Upstream


def origin_handler(scheme, log_path):
    class Origin(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def version_string(self):
            return "origin"

        def log_message(self, *args):
            pass

        def record(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                body = self.rfile.read(length)
            elif "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                body = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    chunk = self.rfile.read(size + 2)
                    if size == 0:
                        break
                    body += chunk[:-2]
            else:
                body = b""
            local = self.connection.getsockname()
            entry = {
                "server": local[0], "port": local[1], "scheme": scheme,
                "peer": "%s:%d" % self.client_address[:2],
                "sni": getattr(self.connection, "sni", None),
                "method": self.command, "path": self.path,
                "host": self.headers.get("Host"), "cookie": self.headers.get("Cookie"),
                "contentType": self.headers.get("Content-Type"), "body": body.decode("utf-8", "replace"),
            }
            append(log_path, entry)
            return entry

        def reply(self, status, body, headers=()):
            data = body.encode()
            self.send_response(status)
            for header, value in headers:
                self.send_header(header, value)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def handle_any(self):
            entry = self.record()
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            path = url.path
            if path.endswith("/echo"):
                self.reply(200, json.dumps(entry) + "\n", [("Content-Type", "application/json")])
            elif path.endswith("/login"):
                user = urllib.parse.parse_qs(entry["body"]).get("user", ["nobody"])[0]
                cookie = "sid=" + user + "; Path=/; Secure; HttpOnly"
                if "domain" in query:
                    cookie += "; Domain=" + query["domain"][0]
                self.reply(302, "logged in\n", [("Set-Cookie", cookie), ("Location", query["next"][0])])
            elif path.endswith("/redirect"):
                headers = [("Location", query["to"][0])]
                for cookie in query.get("cookie", []):
                    headers.append(("Set-Cookie", cookie + "; Path=/"))
                self.reply(int(query["status"][0]), "redirect\n", headers)
            elif path.endswith("/set"):
                self.reply(200, "set\n", [("Set-Cookie", value) for value in query.get("cookie", [])])
            elif path.endswith("/stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for index in range(int(query.get("chunks", ["3"])[0])):
                    data = ("chunk %d\n" % index).encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            elif path.endswith("/notfound"):
                self.reply(404, "missing\n")
            else:
                self.reply(400, "unknown path\n")

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any

    return Origin


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False


class TLSServer(Server):
    """Handshakes in the request's thread and records the SNI the client sent."""

    def __init__(self, address, handler, context):
        super().__init__(address, handler)
        self.context = context

    def finish_request(self, request, client_address):
        try:
            request = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


def tls_context(cert, key):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def remember_sni(tls_socket, server_name, _context):
        tls_socket.sni = server_name

    context.sni_callback = remember_sni
    return context


def start_origins(log_path, cert, key):
    """HTTP and HTTPS on every address of ORIGINS, on one pair of ports for all of them."""
    context = tls_context(cert, key)
    for _ in range(50):
        servers = []
        try:
            first_http = Server((ORIGINS[0], 0), origin_handler("http", log_path))
            first_https = TLSServer((ORIGINS[0], 0), origin_handler("https", log_path), context)
            servers = [first_http, first_https]
            ports = (first_http.server_address[1], first_https.server_address[1])
            for address in ORIGINS[1:]:
                servers.append(Server((address, ports[0]), origin_handler("http", log_path)))
                servers.append(TLSServer((address, ports[1]), origin_handler("https", log_path), context))
        except OSError:
            for server in servers:
                server.server_close()
            continue
        for server in servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return ports
    raise SystemExit("no pair of ports was free on every origin address")


def pipe(a, b):
    """Copies bytes both ways until either side closes."""
    sockets = [a, b]
    try:
        while True:
            readable, _, _ = select.select(sockets, [], [], 60)
            if not readable:
                return
            for source in readable:
                data = source.recv(65536)
                if not data:
                    return
                (b if source is a else a).sendall(data)
    except OSError:
        return
    finally:
        a.close()
        b.close()


def proxy_handler(answers_path, log_path):
    class Proxy(socketserver.StreamRequestHandler):
        rbufsize = 0  # unbuffered: what follows the request head stays in the socket for the tunnel

        def handle(self):
            line = self.rfile.readline(65536).decode("latin-1")
            headers = []
            while True:
                header = self.rfile.readline(65536)
                if header in (b"\r\n", b"\n", b""):
                    break
                headers.append(header)
            method, target, _ = line.split(" ", 2)
            append(log_path, {"method": method, "target": target})
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
            else:
                url = urllib.parse.urlsplit(target)
                host, port = url.hostname, url.port or 80
            answer = read_answers(answers_path).get(host.lower(), [host])
            addresses = answer["ips"] if isinstance(answer, dict) else answer
            try:
                upstream = socket.create_connection((addresses[-1], int(port)), timeout=30)
            except OSError:
                self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            if method == "CONNECT":
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                url = urllib.parse.urlsplit(target)
                origin_form = (url.path or "/") + ("?" + url.query if url.query else "")
                kept = [h for h in headers if not h.lower().startswith((b"proxy-", b"connection:"))]
                upstream.sendall(f"{method} {origin_form} HTTP/1.1\r\n".encode() + b"".join(kept)
                                 + b"Connection: close\r\n\r\n")
            pipe(self.connection, upstream)

    return Proxy


class ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--loopback-up", action="store_true")
    args = parser.parse_args()
    if args.loopback_up:
        bring_loopback_up()
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    answers_path = os.path.join(directory, "answers.json")
    with open(answers_path, "w") as f:
        json.dump(HOSTS, f)
    ca, cert, key = make_pki(directory)
    records = os.path.join(directory, "requests.log")
    proxy_log = os.path.join(directory, "proxy.log")
    open(records, "a").close()
    open(proxy_log, "a").close()
    http_port, https_port = start_origins(records, cert, key)
    upstream = Server(("127.0.0.1", 0), upstream_handler(answers_path))
    proxy = ProxyServer(("127.0.0.1", 0), proxy_handler(answers_path, proxy_log))
    for server in (upstream, proxy):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream_url = "http://127.0.0.1:%d/%s" % (upstream.server_address[1], ACCOUNT)
    config = os.path.join(directory, "httpdnsd.conf")
    with open(config, "w") as f:
        f.write("[Resolver]\nUpstream=alibaba %s\nTimeout=5s\n" % upstream_url)
    description = {
        "dir": directory, "ca": ca, "httpPort": http_port, "httpsPort": https_port,
        "proxy": "http://127.0.0.1:%d" % proxy.server_address[1], "upstream": upstream_url,
        "hosts": HOSTS, "origins": ORIGINS, "records": records, "proxyLog": proxy_log,
        "answers": answers_path, "config": config, "pid": os.getpid(),
    }
    temporary = os.path.join(directory, "fixture.json.tmp")
    with open(temporary, "w") as f:
        json.dump(description, f, indent=1)
    os.replace(temporary, os.path.join(directory, "fixture.json"))
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
