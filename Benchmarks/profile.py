#!/usr/bin/env python3
"""Where the daemon's time goes: instructions per request on the varied templates, by callgrind.

The daemon runs under `valgrind --tool=callgrind` with the bench's state (1000 sites x 3 cookies,
10,000 cached names, filled with instrumentation off); then each template is sent once, line by
line, at 1x1 and at 32x8, with instrumentation on for just that run (after one unmeasured pass,
so that the jar's per-host memories are as a long run finds them). Instruction counts do not
depend on the machine's load, so two profiles compare where req/s would not.

    Benchmarks/profile.py --daemon .build/shipped/release/httpdnsd          # after .ci/bench built the rest
    Benchmarks/profile.py --daemon BIN --out DIR --only mix                  # the varied mix alone

For each run it prints each thread's instructions per request and writes DIR/NAME-CxD/: the
callgrind files and `annotate.txt` (callgrind_annotate of the busiest thread, inclusive and self).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench  # noqa: E402


def thread_totals(directory):
    """{file: instructions} for each thread's dump in `directory`."""
    totals = {}
    for path in sorted(glob.glob(os.path.join(directory, "callgrind.out*"))):
        with open(path) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    totals[path] = int(line.split()[1])
                    break
    return totals


def demangled(text):
    """Swift's symbols readable, when the toolchain's demangler is at hand."""
    if not shutil.which("swift"):
        return text
    done = subprocess.run(["swift", "demangle", "--simplified"], input=text, stdout=subprocess.PIPE, text=True)
    return done.stdout if done.returncode == 0 else text


def control(pid, *command):
    """callgrind_control on the daemon: zero, instrumentation on or off, dump."""
    subprocess.run(["callgrind_control", *command, str(pid)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--daemon", required=True, help="the httpdnsd binary (a release build)")
    p.add_argument("--rpcload", default=os.path.join(ROOT, ".build/bench/rpcload"))
    p.add_argument("--out", default=os.path.join(ROOT, ".build/profile"), help="where the profiles go")
    p.add_argument("--only", help="comma-separated: mix, get, get-ip, resolve, set (default all)")
    p.add_argument("--shapes", default="1x1,32x8")
    a = p.parse_args()
    if not shutil.which("valgrind"):
        print("profile: valgrind is needed (Debian package valgrind)", file=sys.stderr)
        return 2

    work = tempfile.mkdtemp(prefix="httpdnsd-profile.")
    os.makedirs(a.out, exist_ok=True)
    dumps = os.path.join(work, "dumps")
    os.makedirs(dumps)
    # Valgrind 3.19 gives up on the DWARF 5 that Swift 6.3 writes: profile a copy without it (the
    # symbol table stays, so the profile still names every function).
    daemon = os.path.join(work, "httpdnsd")
    subprocess.run(["objcopy", "--strip-debug", a.daemon, daemon], check=True)
    # The bench starts the daemon by path: a wrapper puts it under callgrind, instrumentation off.
    wrapper = os.path.join(work, "httpdnsd-under-callgrind")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes "
                f"--log-file={work}/valgrind.log --callgrind-out-file={dumps}/callgrind.out.%p '{daemon}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    args = argparse.Namespace(daemon=wrapper, rpcload=a.rpcload, refserver=None, quick=False, keep=False,
                              sites=1000, names=10000, seconds=None, warmup=0)
    b = bench.Bench(args)
    os.rmdir(b.work)
    b.work = work
    upstream = bench.FakeAlibaba()
    try:
        b.run_fill(upstream)
        pid = b.daemon.process.pid
        kinds = dict(zip(["get", "get-ip", "resolve", "set", "mix"],
                         bench.varied_templates(work, args.sites, args.names)))
        chosen = a.only.split(",") if a.only else list(kinds)
        print(f"state: {b.report['state']['cookies']} cookies, {b.report['state']['cacheEntries']} cache entries\n")
        print("| template | conns x depth | requests | instructions per request, by thread (busiest first) |")
        print("| --- | --- | ---: | --- |")
        for kind in chosen:
            title, path, expect = kinds[kind]
            with open(path) as f:
                requests = sum(1 for line in f if line.strip() and not line.startswith("#"))
            for shape in a.shapes.split(","):
                connections, depth = (int(x) for x in shape.split("x"))
                # Once unmeasured first: the bench's runs go round their lines many times, so a
                # measured pass meets the jar's per-host memories already filled, as they do.
                b.load(b.daemon.socket, path, connections, depth, expect=expect, once=True)
                for old in glob.glob(os.path.join(dumps, "callgrind.out.*.*")):
                    os.unlink(old)
                control(pid, "-z")
                control(pid, "-i", "on")
                b.load(b.daemon.socket, path, connections, depth, expect=expect, once=True)
                control(pid, "-d", f"{kind}-{shape}")
                control(pid, "-i", "off")
                target = os.path.join(a.out, f"{kind}-{shape}")
                shutil.rmtree(target, ignore_errors=True)
                os.makedirs(target)
                for dump in glob.glob(os.path.join(dumps, "callgrind.out.*.*")):
                    shutil.move(dump, target)
                totals = sorted(thread_totals(target).items(), key=lambda kv: -kv[1])
                busiest = totals[0][0]
                with open(os.path.join(target, "annotate.txt"), "w") as f:
                    for flag in ("--inclusive=yes", "--inclusive=no"):
                        f.write(demangled(subprocess.run(["callgrind_annotate", flag, "--threshold=99", busiest],
                                                         stdout=subprocess.PIPE, text=True).stdout))
                per = ", ".join(f"{total / requests:,.0f}" for _, total in totals if total / requests >= 50)
                print(f"| {title} | {shape} | {requests} | {per} |", flush=True)
        print(f"\nprofiles: {a.out}")
    finally:
        upstream.close()
        b.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
