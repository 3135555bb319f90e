#!/usr/bin/python3
"""The figures of the README's "Security: bounds" section: each attack of issue 22 against a
daemon, as a hostile uid (65534, through setpriv) while another user (root, this script) times
its status round trips, with the daemon's peak resident memory from /proc.

Usage (root): Benchmarks/bounds/attacks.py HTTPDNSD [ATTACK...]
  HTTPDNSD  the daemon binary (e.g. .build/release/httpdnsd)
  ATTACK    freeze, amplify, blank (default: all three)

Each attack runs on a fresh daemon (--socket and --state-dir in a temporary directory); the
attacker is Tests/attack/attacker.py. Prints one line per attack: the victim's worst and median
round trip, how many it made, the growth of the daemon's peak resident memory, and how long the
attacker took. Nothing leaves the machine: the daemon has no configuration (no upstream is
asked) and speaks only on its Unix socket.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ATTACKER = os.path.join(HERE, "..", "..", "Tests", "attack", "attacker.py")
ATTACKS = {
    "freeze": (["fill", "3000", "4000"], ["freeze", "3", "1024"], ""),
    "amplify": (["fill", "3000", "4000"], ["amplify", "300", "6"], ""),
    # Without LineTimeout=, the one-byte lines stay for as long as the attack holds them.
    "blank": (None, ["blank", "300", "1000000", "4"], "[Server]\nLineTimeout=0\n"),
}


def peak_rss(pid):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def as_attacker(socket_path, arguments, **kwargs):
    command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", ATTACKER]
    return subprocess.Popen(command + [socket_path] + arguments, stdout=subprocess.PIPE, text=True, **kwargs)


def status_round_trip(victim):
    started = time.monotonic()
    victim.sendall(b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
    data = b""
    while not data.endswith(b"\n"):
        chunk = victim.recv(65536)
        if not chunk:
            raise SystemExit("the daemon closed the victim's connection")
        data += chunk
    return time.monotonic() - started


def run(binary, name):
    fill, attack, config = ATTACKS[name]
    directory = tempfile.mkdtemp(prefix="attacks-")
    os.chmod(directory, 0o755)
    path = os.path.join(directory, "d.sock")
    with open(os.path.join(directory, "httpdnsd.conf"), "w") as file:
        file.write(config)
    log = open(os.path.join(directory, "daemon.log"), "w")
    daemon = subprocess.Popen(
        [binary, "--config", os.path.join(directory, "httpdnsd.conf"), "--socket", path, "--state-dir",
         os.path.join(directory, "state")],
        stdout=log, stderr=log, env={"SWIFT_BACKTRACE": "enable=no", "PATH": "/usr/bin:/bin"})
    try:
        while not os.path.exists(path):
            time.sleep(0.05)
        os.chmod(path, 0o666)
        if fill:
            filler = as_attacker(path, fill)
            filler.wait()
        victim = socket.socket(socket.AF_UNIX)
        victim.connect(path)
        status_round_trip(victim)
        before = peak_rss(daemon.pid)
        started = time.monotonic()
        attacker = as_attacker(path, attack)
        times = []
        ready_at = None
        while attacker.poll() is None or len(times) < 20:
            times.append(status_round_trip(victim))
            time.sleep(0.02)
            if time.monotonic() - started > 300:
                break
        took = time.monotonic() - started
        grown = peak_rss(daemon.pid) - before
        print("%-8s worst %7.3f s  median %6.4f s  %5d round trips  peak +%4d MiB  attack %5.1f s  (%s)" % (
            name, max(times), statistics.median(times), len(times), grown >> 20, took,
            (attacker.stdout.read() or "").strip()[:40]), flush=True)
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(directory, ignore_errors=True)


def main():
    if len(sys.argv) < 2 or os.geteuid() != 0:
        print(__doc__, file=sys.stderr)
        raise SystemExit(64)
    for name in sys.argv[2:] or list(ATTACKS):
        run(os.path.abspath(sys.argv[1]), name)


main()
