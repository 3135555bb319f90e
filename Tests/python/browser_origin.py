#!/usr/bin/env python3
"""Origin servers for the browser-session tests (httpdnsctl browser open).

For each --host NAME=ADDRESS[,CERT,KEY] it serves HTTP (and, with a certificate, HTTPS) on
ADDRESS only (a request that reaches it came to that address), on ports the kernel picks, and
writes DIR/ports.json ({"NAME": {"http": PORT, "https": PORT or null}}) once all listen. Every
request is appended to DIR/requests.log as one JSON object: the server's name, scheme and
address, method, path, query, Cookie header (null when absent) and the time it arrived. Over
HTTPS every cookie the server sets is Secure.

Paths:
  POST /login?next=URL   form user=NAME: Set-Cookie lsid=NAME-login (host-only, HttpOnly), 302 to URL
  GET  /welcome?user=N   Set-Cookie sid=N (host-only, HttpOnly) and theme=dark (script-visible), the app page
  GET  /app[?js=V]       the app page: with js, a script sets the cookie js=V first; it reports
                         document.cookie to /report?dc=..., then fetches /tick every 300 ms
  GET  /form?action=URL  a form that POSTs user=browser to URL as soon as it loads
  GET  /logout           Set-Cookie sid=; Max-Age=0
  GET  /targets?frame=URL a page that frames URL, starts a dedicated worker (/worker.js) and
                         registers a service worker (/sw.js); each worker fetches a path that
                         sets a cookie: /from-worker (worker=1), /from-sw (sw=1)
  GET  /frame            Set-Cookie frame=1 (SameSite=None), a page that fetches /frame-fetch
                         (Set-Cookie framefetch=1, SameSite=None): framed from another site, both
                         are cookies of a cross-site frame (over HTTPS, as SameSite=None needs)
  anything else          200, the request's record as JSON

--loopback-up brings the loopback interface up first: the tests run this in a private network
namespace (unshare -n), where nothing but loopback exists, so no request can leave the machine.
"""
import argparse
import fcntl
import html
import http.server
import json
import os
import socket
import ssl
import struct
import threading
import time
import urllib.parse

LOCK = threading.Lock()

APP_PAGE = """<!doctype html><title>app</title><p>app</p><script>
const js = new URLSearchParams(location.search).get("js");
if (js) document.cookie = "js=" + js + "; path=/";
fetch("/report?dc=" + encodeURIComponent(document.cookie));
setInterval(() => fetch("/tick"), 300);
</script>"""

TARGETS_PAGE = """<!doctype html><title>targets</title><iframe src="{frame}"></iframe><script>
new Worker("/worker.js");
if (navigator.serviceWorker) navigator.serviceWorker.register("/sw.js");
</script>"""

WORKER_SCRIPTS = {
    "/worker.js": 'fetch("/from-worker");',
    "/sw.js": 'self.addEventListener("install", (event) => event.waitUntil(fetch("/from-sw")));',
}

FRAME_PAGE = """<!doctype html><title>frame</title><p>frame</p><script>fetch("/frame-fetch");</script>"""

WORKER_COOKIES = {"/from-worker": "worker=1; Path=/", "/from-sw": "sw=1; Path=/",
                  "/frame-fetch": "framefetch=1; Path=/; SameSite=None"}

FORM_PAGE = """<!doctype html><title>form</title><form method="post" action="{action}">
<input name="user" value="browser"></form><script>document.forms[0].submit();</script>"""


def bring_loopback_up():
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def make_handler(name, scheme, address, log_path):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def record(self, body=b""):
            parts = urllib.parse.urlsplit(self.path)
            entry = {
                "server": name,
                "scheme": scheme,
                "address": address,
                "method": self.command,
                "path": parts.path,
                "query": dict(urllib.parse.parse_qsl(parts.query)),
                "cookie": self.headers.get("Cookie"),
                "time": time.time(),
            }
            with LOCK, open(log_path, "a") as log:
                log.write(json.dumps(entry) + "\n")
            return entry

        def answer(self, status, body=b"", content_type="text/html", cookies=(), location=None):
            self.send_response(status)
            for cookie in cookies:
                self.send_header("Set-Cookie", cookie + ("; Secure" if scheme == "https" else ""))
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", content_type)
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            entry = self.record()
            if entry["path"] == "/login":
                user = form.get("user", "nobody")
                self.answer(302, cookies=[f"lsid={user}-login; Path=/; HttpOnly"],
                            location=entry["query"].get("next", "/"))
            else:
                self.answer(404)

        def do_GET(self):
            entry = self.record()
            path, query = entry["path"], entry["query"]
            if path == "/welcome":
                user = query.get("user", "nobody")
                self.answer(200, APP_PAGE.encode(),
                            cookies=[f"sid={user}; Path=/; HttpOnly", "theme=dark; Path=/"])
            elif path == "/app":
                self.answer(200, APP_PAGE.encode())
            elif path == "/form":
                page = FORM_PAGE.format(action=html.escape(query.get("action", "/"), quote=True))
                self.answer(200, page.encode())
            elif path == "/logout":
                self.answer(200, b"bye\n", "text/plain", cookies=["sid=; Path=/; Max-Age=0"])
            elif path == "/targets":
                page = TARGETS_PAGE.format(frame=html.escape(query.get("frame", "about:blank"), quote=True))
                self.answer(200, page.encode())
            elif path in WORKER_SCRIPTS:
                self.answer(200, WORKER_SCRIPTS[path].encode(), "text/javascript")
            elif path == "/frame":
                self.answer(200, FRAME_PAGE.encode(), cookies=["frame=1; Path=/; SameSite=None"])
            elif path in WORKER_COOKIES:
                self.answer(204, cookies=[WORKER_COOKIES[path]])
            elif path in ("/report", "/tick"):
                self.answer(204)
            else:
                self.answer(200, json.dumps(entry).encode(), "application/json")

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--host", action="append", required=True, help="NAME=ADDRESS")
    parser.add_argument("--loopback-up", action="store_true")
    options = parser.parse_args()
    if options.loopback_up:
        bring_loopback_up()
    log_path = os.path.join(options.dir, "requests.log")
    ports = {}
    for spec in options.host:
        name, rest = spec.split("=", 1)
        address, *certificate = rest.split(",")
        ports[name] = {"http": None, "https": None}
        for scheme in ["http", "https"] if certificate else ["http"]:
            server = http.server.ThreadingHTTPServer((address, 0), make_handler(name, scheme, address, log_path))
            server.daemon_threads = True
            if scheme == "https":
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(*certificate)
                server.socket = context.wrap_socket(server.socket, server_side=True)
            ports[name][scheme] = server.server_address[1]
            threading.Thread(target=server.serve_forever, daemon=True).start()
    temporary = os.path.join(options.dir, "ports.json.tmp")
    with open(temporary, "w") as out:
        json.dump(ports, out)
    os.rename(temporary, os.path.join(options.dir, "ports.json"))
    threading.Event().wait()


if __name__ == "__main__":
    main()
