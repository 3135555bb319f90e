"""A plain DNS server for the benchmark: answers A queries for the names given with one address,
AAAA (and anything else) for them with an empty NOERROR answer, other names with NXDOMAIN.
RFC 1035 over UDP, one datagram per answer, stdlib only.

usage: dns_responder.py ADDRESS PORT NAME=IPV4...
Prints "ready" once it listens.
"""
import socket
import struct
import sys


def question(packet):
    """(id, flags, qname bytes as sent, name lowercased, qtype, end offset of the question)."""
    ident, flags, qdcount = struct.unpack("!HHH", packet[:6])
    if qdcount != 1:
        return None
    offset = 12
    labels = []
    while True:
        length = packet[offset]
        offset += 1
        if length == 0:
            break
        labels.append(packet[offset:offset + length].decode("ascii", "replace").lower())
        offset += length
    qtype, _ = struct.unpack("!HH", packet[offset:offset + 4])
    return ident, flags, packet[12:offset + 4], ".".join(labels), qtype


def main():
    address, port = sys.argv[1], int(sys.argv[2])
    zone = {}
    for pair in sys.argv[3:]:
        name, ip = pair.split("=", 1)
        zone[name.lower().rstrip(".")] = socket.inet_aton(ip)
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind((address, port))
    print("ready", flush=True)
    while True:
        packet, peer = server.recvfrom(512)
        try:
            ident, flags, echoed, name, qtype = question(packet)
        except (TypeError, IndexError, struct.error):
            continue
        known = name in zone
        rcode = 0 if known else 3
        answers = b""
        if known and qtype == 1:
            # The name as a pointer to the question (0xC00C), type A, class IN, TTL 300, 4 bytes.
            answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 300, 4) + zone[name]
        header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, 1 if answers else 0, 0, 0)
        server.sendto(header + echoed + answers, peer)


if __name__ == "__main__":
    main()
