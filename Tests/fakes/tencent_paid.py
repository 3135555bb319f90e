"""A loopback fake of Tencent Cloud HTTPDNS's paid forms, written from UPSTREAMS.md section 1b.

GET /d?dn=ENC(names)&id=AUTHID&alg=des|aes[&ip=ENC(client IP)][&ttl=1][&type=aaaa|addrs]: ENC is DES/ECB/PKCS5 in hex,
or a random 16-byte IV followed by AES-128/CBC/PKCS7, in hex; the answer is encrypted the same
way. GET /d?dn=names&token=TOKEN is the HTTPS form (run behind TLS with --certificate/--key).
A batch is dn=a,b (before encryption), answered one line per name, "name.:answer".

Usage: tencent_paid.py ANSWERS.json LOG [--des-key K] [--aes-key K] [--auth-id ID] [--token T]
[--certificate PEM --key PEM]. ANSWERS maps a name to {"v4": [...], "v6": [...], "ttl": N}.
Prints the port once it listens; appends one JSON line per request to LOG.
"""

import argparse
import http.server
import json
import os
import ssl
import urllib.parse

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

parser = argparse.ArgumentParser()
parser.add_argument("answers")
parser.add_argument("log")
parser.add_argument("--des-key")
parser.add_argument("--aes-key")
parser.add_argument("--auth-id")
parser.add_argument("--token")
parser.add_argument("--certificate")
parser.add_argument("--key")
options = parser.parse_args()

with open(options.answers) as f:
    ANSWERS = json.load(f)


def des(key):
    # Single DES: TripleDES with one 8-byte key is K1 = K2 = K3, which is DES.
    return Cipher(algorithms.TripleDES(key.encode()), modes.ECB())


def decrypt(alg, text):
    data = bytes.fromhex(text)
    if alg == "des":
        decryptor = des(options.des_key).decryptor()
        block = 64
    else:
        iv, data = data[:16], data[16:]
        decryptor = Cipher(algorithms.AES(options.aes_key.encode()), modes.CBC(iv)).decryptor()
        block = 128
    padded = decryptor.update(data) + decryptor.finalize()
    unpadder = padding.PKCS7(block).unpadder()
    return (unpadder.update(padded) + unpadder.finalize()).decode()


def encrypt(alg, text):
    if alg == "des":
        encryptor = des(options.des_key).encryptor()
        prefix, block = b"", 64
    else:
        prefix, block = os.urandom(16), 128
        encryptor = Cipher(algorithms.AES(options.aes_key.encode()), modes.CBC(prefix)).encryptor()
    padder = padding.PKCS7(block).padder()
    padded = padder.update(text.encode()) + padder.finalize()
    return (prefix + encryptor.update(padded) + encryptor.finalize()).hex()


def answer(name, kind, with_ttl):
    record = ANSWERS.get(name)
    if record is None:
        return ""
    suffix = ",%d" % record.get("ttl", 60) if with_ttl else ""
    v4 = ";".join(record.get("v4", [])) + suffix
    v6 = ";".join(record.get("v6", [])) + suffix
    if kind == "aaaa":
        return v6 if record.get("v6") else ""
    if kind == "addrs":
        return v4 + "-" + v6
    return v4 if record.get("v4") else ""


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        alg = query.get("alg")
        entry = {"path": url.path, "query": query, "alg": alg}
        status, body = 200, ""
        try:
            if url.path != "/d":
                status = 404
            elif "token" in query:
                if query["token"] != options.token:
                    status = 403
                names = query.get("dn", "")
                if "ip" in query:
                    entry["ip"] = query["ip"]
            elif alg in ("des", "aes"):
                if query.get("id") != options.auth_id:
                    status = 403
                names = decrypt(alg, query.get("dn", ""))
                if "ip" in query:
                    entry["ip"] = decrypt(alg, query["ip"])
            else:
                names = query.get("dn", "")
        except Exception as error:  # a name that does not decrypt with the account's key
            status, names = 400, ""
            entry["error"] = str(error)
        entry["names"] = names.split(",") if names else []
        if status == 200:
            kind, with_ttl = query.get("type", ""), query.get("ttl") == "1"
            if len(entry["names"]) > 1:
                body = "\n".join("%s.:%s" % (n, answer(n, kind, with_ttl)) for n in entry["names"])
            elif entry["names"]:
                body = answer(entry["names"][0], kind, with_ttl)
            if alg in ("des", "aes") and body:
                body = encrypt(alg, body)
        entry["status"] = status
        with open(options.log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if options.certificate:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options.certificate, options.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
