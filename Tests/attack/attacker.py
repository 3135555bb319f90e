#!/usr/bin/python3
"""A hostile local user for the bounds tests (Tests/HTTPDNSServerTests/AttackBoundsTests.swift).

Usage: attacker.py SOCKET MODE [ARGS...]; prints "ready" (flushed) once its requests are sent,
then holds its connections as the mode says and exits 0.

  fill COUNT SIZE          import COUNT cookies of about SIZE bytes into this user's jar
  freeze CONNECTIONS BATCH each connection sends one line, a batch of BATCH exportCookies
                           notifications, then a status request; exits once every connection
                           has its status answer (the batch has run)
  amplify CONNECTIONS HOLD each connection sends one listCookies and never reads; held HOLD s
  overflow CONNECTIONS COOKIES ROUNDS
                           each round, each connection sends one handleSetCookie of COOKIES
                           cookies for a site of its own (a full jar evicts one per cookie),
                           then reads the answers; "ready" after the first round is sent
  blank CONNECTIONS SIZE HOLD
                           one connection after the other sends a blank line of SIZE bytes and
                           one byte of the next line; prints "ready SENT CLOSED" (the bytes that
                           went in, and how many connections the daemon closed), then holds all
                           of them HOLD s
  storm WORKERS SECONDS    WORKERS processes each connect and close at once, as fast as they can,
                           for SECONDS (the loop must not be held accepting them); prints
                           "ready" at the start and "done CONNECTS" at the end
"""
import json
import os
import resource
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def read_line(s):
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("the daemon closed the connection")
        data += chunk
    return data


def fill(path, count, size):
    s = connect(path)
    per_line = max(1, (900 * 1024) // (size + 64))
    index = 0
    while index < count:
        lines = []
        for i in range(index, min(count, index + per_line)):
            lines.append("d%d.example\tFALSE\t/\tFALSE\t0\tc%d\t%s\n" % (i // 150, i, "v" * size))
        index += len(lines)
        request = {"jsonrpc": "2.0", "id": index, "method": "importCookies", "params": {"data": "".join(lines)}}
        s.sendall(json.dumps(request).encode() + b"\n")
        reply = json.loads(read_line(s))
        if reply.get("result", {}).get("imported") != len(lines):
            raise SystemExit("import failed: %s" % str(reply)[:300])
    print("ready", flush=True)


def freeze(path, connections, batch):
    element = '{"jsonrpc":"2.0","method":"exportCookies"}'
    line = ("[" + ",".join([element] * batch) + "]\n").encode()
    sockets = [connect(path) for _ in range(connections)]
    for s in sockets:
        s.sendall(line + b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
    print("ready", flush=True)
    for s in sockets:
        reply = json.loads(read_line(s))
        if "result" not in reply:
            raise SystemExit("status after the batch failed: %s" % reply)


def amplify(path, connections, hold):
    sockets = []
    for _ in range(connections):
        s = connect(path)
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"listCookies"}\n')
        sockets.append(s)
    print("ready", flush=True)
    time.sleep(hold)


def overflow(path, connections, cookies, rounds):
    sockets = [connect(path) for _ in range(connections)]
    for turn in range(rounds):
        for index, s in enumerate(sockets):
            params = {
                "url": "http://s%d-%d.example/" % (turn, index),
                "setCookie": ["k%d=v; Max-Age=600" % i for i in range(cookies)],
            }
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "handleSetCookie", "params": params}).encode() + b"\n")
        if turn == 0:
            print("ready", flush=True)
        for s in sockets:
            reply = json.loads(read_line(s))
            if reply.get("result", {}).get("stored") != cookies:
                raise SystemExit("a set failed: %s" % str(reply)[:300])


def blank(path, connections, size, hold):
    payload = b" " * size + b"\nx"
    sockets = []
    sent = closed = 0
    for _ in range(connections):
        s = connect(path)
        sockets.append(s)
        try:
            s.sendall(payload)
            sent += len(payload)
        except (BrokenPipeError, ConnectionResetError):
            closed += 1
    print("ready %d %d" % (sent, closed), flush=True)
    time.sleep(hold)


def storm(path, workers, seconds):
    print("ready", flush=True)
    deadline = time.monotonic() + seconds
    children = []
    for _ in range(workers):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(reader)
            connects = 0
            while time.monotonic() < deadline:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(path)
                    connects += 1
                except OSError:
                    pass
                s.close()
            os.write(writer, b"%d" % connects)
            os._exit(0)
        os.close(writer)
        children.append((pid, reader))
    total = 0
    for pid, reader in children:
        total += int(os.read(reader, 64) or b"0")
        os.waitpid(pid, 0)
    print("done %d" % total, flush=True)


def main():
    path, mode, args = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    {"fill": fill, "freeze": freeze, "amplify": amplify, "overflow": overflow, "blank": blank, "storm": storm}[mode](path, *args)


main()
