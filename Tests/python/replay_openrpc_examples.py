#!/usr/bin/env python3
"""Replays every example pairing of rpc-schema/httpdnsd.openrpc.json against a running daemon
and validates each live result against the method's result schema.

Also checks the dispatcher's method set against the document: every documented method is
served (no -32601), and rpc.discover returns the document itself.

HTTPDNSD_SOCKET names the daemon's socket; the daemon should answer api.example.com from a
Static= entry so that the resolve examples do not depend on the network. Prints
"N passed, N failed"; exit status 1 on any failure.
"""
import json
import os
import socket
import sys

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENT = os.path.join(ROOT, "rpc-schema", "httpdnsd.openrpc.json")


class Daemon:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.buffer = b""
        self.next_id = 0

    def call(self, method, params):
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        while True:
            while b"\n" not in self.buffer:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("the daemon closed the connection")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            response = json.loads(line)
            # The monitor examples subscribe this connection: its events come in between.
            if "id" not in response and response.get("method") == "monitorEvent":
                continue
            assert response.get("id") == self.next_id, response
            return response


def main():
    with open(DOCUMENT, encoding="utf-8") as f:
        doc = json.load(f)
    daemon = Daemon(os.environ["HTTPDNSD_SOCKET"])
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL", what)

    for method in doc["methods"]:
        name = method["name"]
        result_schema = dict(method["result"]["schema"])
        # $refs in the method's schemas point into the document's components.
        result_schema["components"] = doc.get("components", {})
        validator = jsonschema.Draft7Validator(result_schema)
        # Served at all: even an empty call must not be "method not found".
        probe = daemon.call(name, {})
        check(probe.get("error", {}).get("code") != -32601, f"{name}: the dispatcher serves it")
        for example in method.get("examples", []):
            params = {p["name"]: p["value"] for p in example.get("params", [])}
            response = daemon.call(name, params)
            label = f"{name} example {example.get('name', '?')!r}"
            if "error" in response:
                check(False, f"{label}: answered {json.dumps(response['error'])}")
                continue
            errors = sorted(validator.iter_errors(response["result"]), key=str)
            check(not errors, f"{label}: live result valid against the result schema"
                  + ("" if not errors else ": " + "; ".join(e.message for e in errors[:3])))
    discovered = daemon.call("rpc.discover", {})
    check(discovered.get("result") == doc, "rpc.discover returns the document")
    unknown = daemon.call("noSuchMethod", {})
    check(unknown.get("error", {}).get("code") == -32601, "an undocumented method is not served")
    print(f"replay_openrpc_examples: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
