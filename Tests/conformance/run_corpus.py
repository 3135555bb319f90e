#!/usr/bin/env python3
"""Runs the http-state cookie corpus (http-state.json beside this file) against a running httpdnsd.

For each case, on one connection to the daemon's socket:

    deleteCookies    {"all": true}
    handleSetCookie  {"url": <step's setCookieUrl>, "setCookie": <step's setCookie>}   for each step
    getCookieHeader  {"url": <case's requestUrl>}

and the answer's "header" must equal the case's expectation byte for byte: under the default
rfc6265bis profile its "expectedRfc6265bis" when it has one, else "expected" (the rfc6265 profile
reads "expectedRfc6265" first instead).

The cases listed in known-failures.txt (beside this file, with the reason for each) are expected
to fail. The run succeeds when exactly those fail: a new failure, or a known failure that now
passes (known-failures.txt and the README's "Cookie conformance" section then need updating),
fails it. Exit status: 0 as expected; 1 otherwise; 2 the corpus is unreadable or the daemon is
unreachable or misbehaves (an error answer, a closed connection, no answer within --timeout).

Python 3 standard library only.
"""

import argparse
import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class DaemonProblem(Exception):
    pass


class Connection:
    def __init__(self, path, timeout):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.pending = b""
        self.last_id = 0

    def call(self, method, params):
        self.last_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params},
                          ensure_ascii=False, separators=(",", ":"))
        try:
            self.sock.sendall(line.encode("utf-8") + b"\n")
            while b"\n" not in self.pending:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise DaemonProblem(f"{method}: the daemon closed the connection")
                self.pending += chunk
        except socket.timeout:
            raise DaemonProblem(f"{method}: no answer within {self.sock.gettimeout():g} s")
        except OSError as e:
            raise DaemonProblem(f"{method}: {e}")
        answer, _, self.pending = self.pending.partition(b"\n")
        reply = json.loads(answer)
        if reply.get("id") != self.last_id:
            raise DaemonProblem(f"{method}: answered id {reply.get('id')!r}, asked {self.last_id}")
        if "error" in reply:
            raise DaemonProblem(f"{method} {json.dumps(params)[:200]}: error {json.dumps(reply['error'])}")
        return reply["result"]


def expectation(case, profile):
    preferred = {"rfc6265bis": "expectedRfc6265bis", "rfc6265": "expectedRfc6265"}.get(profile)
    if preferred and preferred in case:
        return case[preferred]
    return case["expected"]


def read_known_failures(path):
    """{case id: reason} from lines "ID  reason"; # starts a comment."""
    known = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                case_id, _, reason = line.partition(" ")
                known[case_id] = reason.strip()
    return known


def run_case(connection, case):
    connection.call("deleteCookies", {"all": True})
    for step in case["steps"]:
        connection.call("handleSetCookie", {"url": step["setCookieUrl"], "setCookie": step["setCookie"]})
    header = connection.call("getCookieHeader", {"url": case["requestUrl"]}).get("header")
    if not isinstance(header, str):
        raise DaemonProblem(f"getCookieHeader {case['requestUrl']}: no string header in the answer")
    return header


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", required=True, help="the daemon's socket")
    p.add_argument("--corpus", default=os.path.join(HERE, "http-state.json"))
    p.add_argument("--known-failures", default=os.path.join(HERE, "known-failures.txt"))
    p.add_argument("--profile", choices=["rfc6265bis", "rfc6265", "corpus"], default="rfc6265bis")
    p.add_argument("--timeout", type=float, default=10, help="seconds to wait for each answer")
    a = p.parse_args()

    try:
        with open(a.corpus, encoding="utf-8") as f:
            cases = json.load(f)
        known = read_known_failures(a.known_failures)
    except (OSError, ValueError) as e:
        print(f"run_corpus: {e}", file=sys.stderr)
        return 2
    unknown_ids = set(known) - {case["id"] for case in cases}
    if unknown_ids:
        print(f"run_corpus: known-failures.txt names cases the corpus lacks: {', '.join(sorted(unknown_ids))}",
              file=sys.stderr)
        return 2

    try:
        connection = Connection(a.socket, a.timeout)
        failed = {}
        for case in cases:
            expected = expectation(case, a.profile)
            actual = run_case(connection, case)
            if actual != expected:
                failed[case["id"]] = (actual, expected)
    except (OSError, DaemonProblem) as e:
        print(f"run_corpus: {e}", file=sys.stderr)
        return 2

    for case_id, (actual, expected) in failed.items():
        why = known.get(case_id, "NOT EXPECTED")
        print(f"not passing: {case_id}: got {json.dumps(actual)}, expected {json.dumps(expected)} ({why})")
    print(f"http-state corpus ({a.profile} profile) against the daemon: {len(cases) - len(failed)} of "
          f"{len(cases)} cases pass")
    new = sorted(set(failed) - set(known))
    fixed = sorted(set(known) - set(failed))
    if new:
        print(f"unexpected failures: {', '.join(new)}")
    if fixed:
        print(f"known failures that now pass (update known-failures.txt and the README): {', '.join(fixed)}")
    return 1 if new or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
