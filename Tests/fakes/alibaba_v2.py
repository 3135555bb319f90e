"""A loopback fake of Alibaba Cloud HTTPDNS's v2 resolve API, written from UPSTREAMS.md section 1a.

GET /v2/d?id=ACCOUNT&m=0&dn=NAMES&q=4|6|4,6&exp=EXPIRY&v=1.0&s=SIGNATURE, or, encrypted,
GET /v2/d?id=ACCOUNT&m=1|2&enc=HEX&exp=EXPIRY&v=1.0&s=SIGNATURE where HEX is the IV (16 bytes for
m=1, AES-128-CBC with PKCS#7 padding; 12 bytes for m=2, AES-128-GCM, its 16-byte tag after the
ciphertext) and then the ciphertext of the JSON object {"dn": NAMES, "q": ...} under the
hex-decoded --aes-key; the answer's "data" is then base64 of the same form (a fresh IV, the
ciphertext of the data object), with "mode" the request's m. The signature is the
lower-case hex HMAC-SHA256, keyed with the hex-decoded secret, of the signed parameters (id, m, dn,
cip, q, enc, exp, tags, v and any sdns-*) that are not empty, as key=value sorted by key and
joined by "&". An expired exp is refused as SignatureExpired, one more than a day ahead as
InvalidDuration, a wrong signature as InvalidSignature, another account as InvalidAccount. Every
answer carries a Date header from the fake's clock, which --clock-ahead puts ahead of the machine's.

Usage: alibaba_v2.py ANSWERS.json LOG --account ID --secret HEX [--aes-key HEX] [--clock-ahead SECONDS]
ANSWERS maps a name to {"v4": [...], "v6": [...], "ttl": N}. Prints the port once it listens;
appends one JSON line per request to LOG.
"""

import argparse
import base64
import email.utils
import hashlib
import hmac
import http.server
import json
import os
import time
import urllib.parse

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SIGNED = {"id", "m", "dn", "cip", "q", "enc", "exp", "tags", "v"}

parser = argparse.ArgumentParser()
parser.add_argument("answers")
parser.add_argument("log")
parser.add_argument("--account", required=True)
parser.add_argument("--secret", required=True)
parser.add_argument("--aes-key")
parser.add_argument("--clock-ahead", type=int, default=0)
options = parser.parse_args()

with open(options.answers) as f:
    ANSWERS = json.load(f)


def now():
    return int(time.time()) + options.clock_ahead


def signature(params):
    pairs = sorted(
        (k, v) for k, v in params.items() if (k in SIGNED or k.startswith("sdns-")) and v != ""
    )
    content = "&".join("%s=%s" % pair for pair in pairs)
    return hmac.new(bytes.fromhex(options.secret), content.encode(), hashlib.sha256).hexdigest()


IV_LENGTH = {"1": 16, "2": 12}


def aes_key():
    return bytes.fromhex(options.aes_key)


def open_sealed(mode, sealed):
    """The plaintext of IV + ciphertext (+ tag) in mode "1" or "2"; raises if it does not decrypt."""
    iv, body = sealed[: IV_LENGTH[mode]], sealed[IV_LENGTH[mode]:]
    if mode == "2":
        return AESGCM(aes_key()).decrypt(iv, body, None)
    decryptor = Cipher(algorithms.AES(aes_key()), modes.CBC(iv)).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(decryptor.update(body) + decryptor.finalize()) + unpadder.finalize()


def seal(mode, plaintext):
    iv = os.urandom(IV_LENGTH[mode])
    if mode == "2":
        return iv + AESGCM(aes_key()).encrypt(iv, plaintext, None)
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(aes_key()), modes.CBC(iv)).encryptor()
    return iv + encryptor.update(padder.update(plaintext) + padder.finalize()) + encryptor.finalize()


def family(record, key, wanted):
    ips = record.get(key, []) if wanted else []
    entry = {"ips": ips, "ttl": record.get("ttl", 60)}
    if not ips:
        entry["no_ip_code"] = "RRNotExist"
    return entry


def answer(names, query_type):
    answers = []
    for name in names:
        record = ANSWERS.get(name)
        if record is None:
            continue
        entry = {"dn": name}
        if "4" in query_type.split(","):
            entry["v4"] = family(record, "v4", True)
        if "6" in query_type.split(","):
            entry["v6"] = family(record, "v6", True)
        answers.append(entry)
    return {"code": "success", "mode": 0, "data": {"cip": "127.0.0.1", "answers": answers}}


def refusal(params):
    """The service's error code for this request, or None to answer it."""
    if params.get("id") != options.account:
        return "InvalidAccount"
    if not hmac.compare_digest(params.get("s", ""), signature(params)):
        return "InvalidSignature"
    try:
        expiry = int(params.get("exp", ""))
    except ValueError:
        return "MissingArgument"
    if expiry < now():
        return "SignatureExpired"
    if expiry > now() + 86400:
        return "InvalidDuration"
    if params.get("v") != "1.0":
        return "MissingArgument"
    if params.get("m") == "0":
        return None if params.get("dn") else "MissingArgument"
    if params.get("m") in IV_LENGTH and options.aes_key and params.get("enc"):
        # Encrypted, the names travel inside enc only.
        return "MissingArgument" if "dn" in params or "q" in params else None
    return "MissingArgument"


def decrypted(params):
    """The request's dn, q, cip and sdns-* (from enc in an encrypted mode); None when enc does
    not decrypt."""
    if params["m"] == "0":
        return {k: v for k, v in params.items() if k in ("dn", "q", "cip") or k.startswith("sdns-")}
    try:
        inner = json.loads(open_sealed(params["m"], bytes.fromhex(params["enc"])))
        return inner if isinstance(inner.get("dn"), str) else None
    except Exception:
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def date_time_string(self, timestamp=None):
        return email.utils.formatdate(now(), usegmt=True)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        entry = {"path": url.path, "query": params}
        if url.path != "/v2/d":
            status, body = 404, {"code": "MethodNotAllowed"}
        else:
            code = refusal(params)
            inner = decrypted(params) if code is None else None
            if code is None and inner is None:
                # The documents name no code for an enc that does not decrypt.
                code = "MissingArgument"
            if code is None:
                names = inner["dn"].split(",")
                entry["names"] = names
                entry["parameters"] = inner
                status, body = 200, answer(names, inner.get("q", "4"))
                if params["m"] != "0":
                    plain = json.dumps(body["data"]).encode()
                    body["mode"] = int(params["m"])
                    body["data"] = base64.b64encode(seal(params["m"], plain)).decode()
            else:
                status, body = (403 if code != "MissingArgument" else 400), {"code": code}
        entry["status"], entry["code"] = status, body["code"]
        with open(options.log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
