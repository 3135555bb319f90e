#!/usr/bin/env python3
"""Origin servers for the IP-direct tests (httpdnsctl curl, the libcurl example).

For each --host NAME=ADDRESS,CERT,KEY it serves HTTP and HTTPS (NAME's certificate) on ADDRESS,
on ports the kernel picks, and writes DIR/ports.json ({"NAME": {"address", "http", "https"}})
once all listen. Every request is appended to DIR/requests.log as one JSON object: which server
took it, the TLS SNI the client sent, method, path, Host, Cookie (the first field, and how many
Cookie fields came), Content-Type and body.

Paths (any prefix is allowed, so a relative Location can climb directories):
  .../echo        200, the request's record as JSON
  .../login       POST user=NAME: Set-Cookie sid=NAME (Domain= from ?domain=), 302 to ?next=
  .../redirect    ?status=N&to=URL[&cookie=NAME=VALUE[; ATTRIBUTES]]...: status N with Location: URL
                  and a Set-Cookie per cookie (with Path=/ unless it names a path)
  .../loop        302 to itself (relative)
  .../notfound    404
  .../static      200, a fixed body; .../static-redirect: 302 to static (relative)
With --documentation (the documentation's examples, which name no such paths): a POST to
.../login without ?next= sets sid=USER for the host's parent domain and redirects to that
domain's app host; any other path answers 200 with the request's record. --ports HTTP,HTTPS
binds those ports (80,443 in the private network namespace) instead of the kernel's choice.
Headers are deterministic (fixed Date and Server), so outputs can be compared byte for byte.

--loopback-up brings the loopback interface up first: the tests run this in a private network
namespace (unshare -n), where nothing but loopback exists, so no request can leave the machine.
"""
import argparse
import fcntl
import http.server
import json
import os
import socket
import ssl
import struct
import sys
import threading
import urllib.parse

LOCK = threading.Lock()


DOCUMENTATION = False


def bring_loopback_up():
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def make_handler(name, scheme, log_path):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def version_string(self):
            return "origin"

        def date_time_string(self, timestamp=None):
            return "Thu, 01 Jan 2026 00:00:00 GMT"

        def log_message(self, *args):
            pass

        def record(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            entry = {
                "server": name,
                "scheme": scheme,
                "sni": getattr(self.request, "sni", None),
                "method": self.command,
                "path": self.path,
                "host": self.headers.get("Host"),
                "cookie": self.headers.get("Cookie"),
                "cookieFields": len(self.headers.get_all("Cookie") or []),
                "contentType": self.headers.get("Content-Type"),
                "body": body,
            }
            with LOCK, open(log_path, "a") as log:
                log.write(json.dumps(entry) + "\n")
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
                self.reply(200, json.dumps(entry) + "\n")
            elif path.endswith("/login") and "next" not in query and DOCUMENTATION:
                # The documentation's login: the session for the whole site, then its app host.
                user = urllib.parse.parse_qs(entry["body"]).get("user", ["nobody"])[0]
                site = entry["host"].split(":")[0].split(".", 1)[1]
                cookie = "sid=" + user + "; Path=/; Secure; HttpOnly; Domain=" + site
                self.reply(302, "logged in, redirecting\n", [("Set-Cookie", cookie), ("Location", "https://app." + site + "/")])
            elif path.endswith("/login"):
                user = urllib.parse.parse_qs(entry["body"]).get("user", ["nobody"])[0]
                cookie = "sid=" + user + "; Path=/; Secure; HttpOnly"
                if "domain" in query:
                    cookie += "; Domain=" + query["domain"][0]
                self.reply(302, "logged in, redirecting\n", [("Set-Cookie", cookie), ("Location", query["next"][0])])
            elif path.endswith("/redirect"):
                headers = [("Location", query["to"][0])]
                for cookie in query.get("cookie", []):
                    headers.append(("Set-Cookie", cookie if "path=" in cookie.lower() else cookie + "; Path=/"))
                self.reply(int(query["status"][0]), "redirect body\n", headers)
            elif path.endswith("/loop"):
                self.reply(302, "again\n", [("Location", "loop")])
            elif path.endswith("/notfound"):
                self.reply(404, "missing\n")
            elif path.endswith("/static-redirect"):
                self.reply(302, "moved\n", [("Location", "static")])
            elif path.endswith("/static"):
                self.reply(200, "static body\n", [("X-Static", "yes")])
            elif DOCUMENTATION:
                self.reply(200, json.dumps(entry) + "\n")
            else:
                self.reply(400, "unknown path\n")

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any

    return Handler


class TLSServer(http.server.ThreadingHTTPServer):
    """Handshakes in the request's thread, and records the SNI the client sent."""

    daemon_threads = True

    def __init__(self, address, handler, certificate, key):
        super().__init__(address, handler)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(certificate, key)
        self.context.sni_callback = self.remember_sni

    @staticmethod
    def remember_sni(tls_socket, server_name, context):
        tls_socket.sni = server_name

    def finish_request(self, request, client_address):
        try:
            request = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


class PlainServer(http.server.ThreadingHTTPServer):
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--host", action="append", required=True, help="NAME=ADDRESS,CERT,KEY")
    parser.add_argument("--loopback-up", action="store_true")
    parser.add_argument("--ports", default="0,0", help="HTTP,HTTPS (0: the kernel picks)")
    parser.add_argument("--documentation", action="store_true",
                        help="serve the documentation's examples: a login without ?next, any other path echoed")
    args = parser.parse_args()
    global DOCUMENTATION
    DOCUMENTATION = args.documentation
    http_port, https_port = (int(port) for port in args.ports.split(","))
    if args.loopback_up:
        bring_loopback_up()
    log_path = os.path.join(args.dir, "requests.log")
    ports = {}
    servers = []
    for spec in args.host:
        name, rest = spec.split("=", 1)
        address, certificate, key = rest.split(",")
        plain = PlainServer((address, http_port), make_handler(name, "http", log_path))
        tls = TLSServer((address, https_port), make_handler(name, "https", log_path), certificate, key)
        ports[name] = {"address": address, "http": plain.server_address[1], "https": tls.server_address[1]}
        servers += [plain, tls]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    temporary = os.path.join(args.dir, "ports.json.tmp")
    with open(temporary, "w") as f:
        json.dump(ports, f)
    os.rename(temporary, os.path.join(args.dir, "ports.json"))
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
