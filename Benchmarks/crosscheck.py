#!/usr/bin/env python3
"""The reference server against an outside limit server, in one run: is refserver the least work?

Both servers get the same result bytes and one thread; `rpcload` drives them, interleaved
(each repetition alternates which goes first), at 1x1, 32x1 and 32x8. The limit server is not
part of the project: build it wherever it comes from and pass its path.

    Benchmarks/crosscheck.py --limitserver /tmp/limit/limitserver            # after .ci/bench built rpcload, refserver
    Benchmarks/crosscheck.py --limitserver BIN --reps 5 --json /tmp/cross.json

The limit server must take `--socket PATH --result JSON` (and `--threads N`, given 1), answer
each line with {"jsonrpc":"2.0","id":ID,"result":JSON}, and create PATH once it listens.
Exit status 1 when refserver is below --floor (default 0.95) times the limit server at a shape.
With --instructions, each server also runs under valgrind's callgrind for 20,000 requests at 1x1
and 32x8 and the instructions each spends per request are reported: unlike req/s, a count that
a busy machine does not move.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench  # noqa: E402  (the bench's process helpers)

SHAPES = [(1, 1), (32, 1), (32, 8)]
# What the daemon answers to the template's lookups (three cookies), so both write real-sized answers.
RESULT = json.dumps({"header": "sid=s0003x7f3a9c2e; lang=en-US; pref=theme-dark-3", "count": 3},
                    separators=(",", ":"))


class Server:
    def __init__(self, command, path, seconds=10):
        self.socket = path
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        bench.wait_connectable(path, self.process, seconds)

    def stop(self):
        bench.stop(self.process)


def load(args, path, shape):
    command = [args.rpcload, "--socket", path, "--templates", args.templates, "-c", str(shape[0]),
               "-d", str(shape[1]), "--seconds", str(args.seconds), "--warmup", str(args.warmup), "--json",
               "--expect", '"count":3']
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise bench.BenchError(f"rpcload {' '.join(command[1:])} failed:\n{done.stderr}{done.stdout}")
    return json.loads(done.stdout)


def instructions_per_request(args, work, name, command, shape, requests=20000):
    """The server's user-space instructions per request, counted by callgrind over `requests` lines."""
    path = os.path.join(work, f"cg-{name}.sock")
    out = os.path.join(work, f"callgrind-{name}-{shape[0]}x{shape[1]}.out")
    with open(args.templates, encoding="utf-8") as f:
        lines = [line for line in f if line.strip() and not line.startswith("#")]
    templates = os.path.join(work, "callgrind.jsonl")
    with open(templates, "w", encoding="utf-8") as f:
        f.write("".join(lines[k % len(lines)] for k in range(requests)))
    server = Server(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + command + ["--socket", path],
                    path, seconds=60)
    try:
        done = subprocess.run([args.rpcload, "--socket", path, "--templates", templates, "-c", str(shape[0]),
                               "-d", str(shape[1]), "--once", "--timeout", "60", "--json", "--expect", '"count":3'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise bench.BenchError(f"rpcload under callgrind failed:\n{done.stderr}{done.stdout}")
    finally:
        server.stop()
    with open(out) as f:
        total = next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:")))
    return total / requests


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--limitserver", required=True, help="the outside limit server's binary")
    p.add_argument("--refserver", default=os.path.join(ROOT, ".build/bench/refserver"))
    p.add_argument("--rpcload", default=os.path.join(ROOT, ".build/bench/rpcload"))
    p.add_argument("--templates", default=os.path.join(HERE, "templates/getCookieHeader.jsonl"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--warmup", type=float, default=0.5)
    p.add_argument("--floor", type=float, default=0.95, help="the least refserver/limitserver ratio that passes")
    p.add_argument("--json", metavar="FILE", help="every run and the table as JSON")
    p.add_argument("--instructions", action="store_true",
                   help="also count each server's instructions per request with callgrind (1x1, 32x8)")
    a = p.parse_args()

    work = tempfile.mkdtemp(prefix="httpdnsd-crosscheck.")
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadStart": os.getloadavg()[0],
              "result": RESULT, "templates": a.templates, "runs": [], "table": []}
    servers = {}
    try:
        commands = {"refserver": [a.refserver, "--result", RESULT],
                    "limitserver": [a.limitserver, "--threads", "1", "--result", RESULT]}
        for name, command in commands.items():
            path = os.path.join(work, name + ".sock")
            servers[name] = Server(command + ["--socket", path], path)
        print(f"refserver against the limit server, same result bytes, one thread each, median of {a.reps} "
              f"interleaved, {a.seconds:g} s after {a.warmup:g} s; load {report['loadStart']:.2f} at start\n")
        print("| conns x depth | limitserver req/s | refserver req/s | ratio | limitserver p99 | refserver p99 |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        failed = False
        for shape in SHAPES:
            runs = {"refserver": [], "limitserver": []}
            for rep in range(a.reps):
                order = ["limitserver", "refserver"] if rep % 2 == 0 else ["refserver", "limitserver"]
                for name in order:
                    result = load(a, servers[name].socket, shape)
                    runs[name].append(result)
                    report["runs"].append(dict(result, server=name, connections=shape[0], depth=shape[1]))
            cell = {"connections": shape[0], "depth": shape[1]}
            for name, results in runs.items():
                cell[name] = {"rps": statistics.median(r["rps"] for r in results),
                              "p99_us": statistics.median(r["latency_us"]["p99"] for r in results)}
            cell["ratio"] = cell["refserver"]["rps"] / cell["limitserver"]["rps"]
            failed |= cell["ratio"] < a.floor
            report["table"].append(cell)
            print(f"| {shape[0]}x{shape[1]} | {cell['limitserver']['rps']:,.0f} | {cell['refserver']['rps']:,.0f} | "
                  f"{cell['ratio']:.2f} | {bench.format_us(cell['limitserver']['p99_us'])} | "
                  f"{bench.format_us(cell['refserver']['p99_us'])} |", flush=True)
        if a.instructions:
            print("\ninstructions per request (callgrind, the server's user space; 20,000 requests):\n")
            print("| conns x depth | limitserver | refserver |")
            print("| --- | ---: | ---: |")
            report["instructionsPerRequest"] = []
            for shape in [(1, 1), (32, 8)]:
                counts = {name: instructions_per_request(a, work, name, command, shape)
                          for name, command in commands.items()}
                report["instructionsPerRequest"].append(dict(counts, connections=shape[0], depth=shape[1]))
                print(f"| {shape[0]}x{shape[1]} | {counts['limitserver']:,.0f} | {counts['refserver']:,.0f} |",
                      flush=True)
        report["loadEnd"] = os.getloadavg()[0]
        report["quiet"] = max(report["loadStart"], report["loadEnd"]) < 0.5
        print(f"\nload {report['loadEnd']:.2f} at end ({'quiet' if report['quiet'] else 'not quiet'}); "
              f"refserver >= {a.floor}x limitserver at every shape: {'no' if failed else 'yes'}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(report, f, indent=1)
        return 1 if failed else 0
    except bench.BenchError as e:
        print(f"crosscheck: {e}", file=sys.stderr)
        return 2
    finally:
        for server in servers.values():
            server.stop()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(main())
