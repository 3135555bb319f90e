"""Many threads resolve the same names through socket.getaddrinfo at the same moment.

usage: getaddrinfo_threads.py EXPECTED_JSON THREADS ROUNDS

EXPECTED_JSON maps each name to its sorted answer: ["inet 127.0.0.2", "inet6 fd00::5"], or its
error for a name that must not resolve: ["EAI_NONAME"] (no such name) or ["EAI_NODATA"] (a name
without addresses). Every thread looks up every name ROUNDS times, all threads released together
by a barrier. Prints a JSON summary; exits 1 on any other answer.
"""
import json
import socket
import sys
import threading

ERRORS = {
    socket.EAI_NONAME: "EAI_NONAME",
    socket.EAI_AGAIN: "EAI_AGAIN",
    socket.EAI_FAIL: "EAI_FAIL",
    getattr(socket, "EAI_NODATA", -5): "EAI_NODATA",
    getattr(socket, "EAI_SYSTEM", -11): "EAI_SYSTEM",
}


def answer(name):
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except socket.gaierror as error:
        return [ERRORS.get(error.errno, "EAI(%d)" % error.errno)]
    family = {socket.AF_INET: "inet", socket.AF_INET6: "inet6"}
    return sorted("%s %s" % (family.get(info[0], "?"), info[4][0]) for info in infos)


def main():
    expected = json.loads(sys.argv[1])
    threads = int(sys.argv[2])
    rounds = int(sys.argv[3])
    barrier = threading.Barrier(threads)
    lock = threading.Lock()
    mismatches = []
    counts = {"lookups": 0}

    def work():
        barrier.wait()
        for _ in range(rounds):
            for name, wanted in expected.items():
                got = answer(name)
                with lock:
                    counts["lookups"] += 1
                    if got != wanted and len(mismatches) < 20:
                        mismatches.append({"name": name, "expected": wanted, "got": got})

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({"threads": threads, "lookups": counts["lookups"], "mismatches": mismatches}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
