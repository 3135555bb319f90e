#!/usr/bin/python3
"""Connections from subordinate uids, as a rootless container makes them (run as root).

Usage: subuids.py SOCKET FIRST COUNT HOLD

Makes one user namespace whose uids 0..65535 are FIRST..FIRST+65535 outside (the map written
as newuidmap would write it from /etc/subuid), then COUNT processes in it, process I as uid I
inside, so the daemon reads FIRST+I as SO_PEERCRED. Each connects, asks for status and prints
"I ok" or "I refused MESSAGE"; then all hold their connections HOLD seconds and exit 0.
"""
import ctypes
import json
import os
import socket
import sys
import time

CLONE_NEWUSER = 0x10000000


def in_namespace(path, count, hold, report):
    for index in range(count):
        if os.fork() == 0:
            os.setgid(index)
            os.setuid(index)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(path)
            try:
                s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
            except (BrokenPipeError, ConnectionResetError):
                pass  # a refused connection may be closed already: its one line is still there
            line = s.makefile("rb").readline()
            reply = json.loads(line) if line else {}
            if "result" in reply:
                os.write(report, b"%d ok\n" % index)
            else:
                os.write(report, b"%d refused %s\n" % (index, reply.get("error", {}).get("message", "").encode()))
            time.sleep(hold)
            os._exit(0)
        # One at a time, so the lines come in order.
        time.sleep(0.3)
    for _ in range(count):
        os.wait()


def main():
    path, first, count, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    mapped_read, mapped_write = os.pipe()
    report_read, report_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(mapped_write)
        os.close(report_read)
        if libc.unshare(CLONE_NEWUSER) != 0:
            os._exit(2)
        os.write(report_write, b"unshared\n")
        os.read(mapped_read, 1)
        in_namespace(path, count, hold, report_write)
        os._exit(0)
    os.close(mapped_read)
    os.close(report_write)
    report = os.fdopen(report_read, "rb")
    if report.readline() != b"unshared\n":
        raise SystemExit("unshare(CLONE_NEWUSER) failed")
    with open("/proc/%d/setgroups" % pid, "w") as f:
        f.write("deny")
    for name in ("uid_map", "gid_map"):
        with open("/proc/%d/%s" % (pid, name), "w") as f:
            f.write("0 %d 65536\n" % first)
    os.write(mapped_write, b"x")
    for line in report:
        print(line.decode().rstrip(), flush=True)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


main()
