#!/usr/bin/env python3
"""libhttpdns.so from Python through ctypes, against a running daemon.

HTTPDNS_LIB names the library (default .build/release/libhttpdns.so), HTTPDNSD_SOCKET the
daemon's socket. Only the standard library is used.
"""
import ctypes
import errno
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB_PATH = os.environ.get("HTTPDNS_LIB", os.path.join(ROOT, ".build/release/libhttpdns.so"))
INVALID_PARAMS = -32602


def load(path):
    lib = ctypes.CDLL(os.path.abspath(path))
    client = ctypes.c_void_p
    lib.httpdns_open.argtypes = [ctypes.c_char_p]
    lib.httpdns_open.restype = client
    lib.httpdns_close.argtypes = [client]
    lib.httpdns_close.restype = None
    # Returned strings are c_void_p so that they can be passed back to httpdns_free.
    lib.httpdns_call.argtypes = [client, ctypes.c_char_p, ctypes.c_char_p]
    lib.httpdns_call.restype = ctypes.c_void_p
    lib.httpdns_resolve.argtypes = [client, ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                                    ctypes.POINTER(ctypes.c_size_t)]
    lib.httpdns_resolve.restype = ctypes.c_int
    lib.httpdns_get_cookie_header.argtypes = [client, ctypes.c_char_p, ctypes.c_char_p]
    lib.httpdns_get_cookie_header.restype = ctypes.c_void_p
    lib.httpdns_handle_set_cookie.argtypes = [client, ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
    lib.httpdns_handle_set_cookie.restype = ctypes.c_int
    lib.httpdns_delete_cookies.argtypes = [client, ctypes.c_char_p]
    lib.httpdns_delete_cookies.restype = ctypes.c_long
    lib.httpdns_prepare_request.argtypes = [client, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.POINTER(ctypes.c_void_p)]
    lib.httpdns_prepare_request.restype = ctypes.c_int
    lib.httpdns_prepare_request_host.argtypes = [client, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint,
                                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p),
                                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)]
    lib.httpdns_prepare_request_host.restype = ctypes.c_int
    lib.httpdns_last_error.argtypes = [client, ctypes.POINTER(ctypes.c_char_p)]
    lib.httpdns_last_error.restype = ctypes.c_int
    lib.httpdns_free.argtypes = [ctypes.c_void_p]
    lib.httpdns_free.restype = None
    lib.httpdns_free_addrs.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
    lib.httpdns_free_addrs.restype = None
    lib.httpdns_version.argtypes = []
    lib.httpdns_version.restype = ctypes.c_char_p
    return lib


class Client:
    """A thin Pythonic wrapper, the kind of code a consumer writes."""

    def __init__(self, lib, socket_path):
        self.lib = lib
        self.handle = lib.httpdns_open(socket_path.encode() if socket_path else None)
        if not self.handle:
            raise MemoryError("httpdns_open")

    def close(self):
        self.lib.httpdns_close(self.handle)

    def last_error(self):
        message = ctypes.c_char_p()
        code = self.lib.httpdns_last_error(self.handle, ctypes.byref(message))
        return code, message.value.decode() if message.value is not None else None

    def _take_string(self, pointer):
        if not pointer:
            return None
        try:
            return ctypes.string_at(pointer).decode()
        finally:
            self.lib.httpdns_free(pointer)

    def resolve(self, host):
        addrs = ctypes.POINTER(ctypes.c_char_p)()
        count = ctypes.c_size_t()
        rc = self.lib.httpdns_resolve(self.handle, host.encode(), ctypes.byref(addrs), ctypes.byref(count))
        try:
            return rc, [addrs[i].decode() for i in range(count.value)]
        finally:
            self.lib.httpdns_free_addrs(addrs, count.value)

    def set_cookies(self, url, values, host=None):
        array = (ctypes.c_char_p * len(values))(*[v.encode() for v in values])
        return self.lib.httpdns_handle_set_cookie(self.handle, url.encode(), host.encode() if host else None,
                                                  array, len(values))

    def cookie_header(self, url, host=None):
        return self._take_string(self.lib.httpdns_get_cookie_header(self.handle, url.encode(),
                                                                    host.encode() if host else None))

    def delete_cookies(self, url):
        return self.lib.httpdns_delete_cookies(self.handle, url.encode())

    def prepare_request(self, url):
        """(code, resolve entry, Cookie header) for one IP-direct request."""
        entry, cookie = ctypes.c_void_p(), ctypes.c_void_p()
        rc = self.lib.httpdns_prepare_request(self.handle, url.encode(), ctypes.byref(entry), ctypes.byref(cookie))
        return rc, self._take_string(entry.value), self._take_string(cookie.value)

    def prepare_request_host(self, url, host=None, flags=0):
        """(code, request URL, resolve entry, Cookie header, stale) for one IP-direct request."""
        request_url, entry, cookie, stale = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(7)
        rc = self.lib.httpdns_prepare_request_host(self.handle, url.encode(), host.encode() if host else None, flags,
                                                   ctypes.byref(request_url), ctypes.byref(entry),
                                                   ctypes.byref(cookie), ctypes.byref(stale))
        return (rc, self._take_string(request_url.value), self._take_string(entry.value),
                self._take_string(cookie.value), stale.value)

    def call(self, method, params_json=None):
        return self._take_string(self.lib.httpdns_call(self.handle, method.encode(),
                                                       params_json.encode() if params_json else None))


class LibHTTPDNSTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = load(LIB_PATH)

    def setUp(self):
        self.client = Client(self.lib, os.environ.get("HTTPDNSD_SOCKET"))

    def tearDown(self):
        self.client.close()

    def test_version(self):
        self.assertRegex(self.lib.httpdns_version().decode(), r"^\d+\.\d+\.\d+")

    def test_resolve_localhost_ipv4_first(self):
        rc, addresses = self.client.resolve("localhost")
        self.assertEqual(rc, 0, self.client.last_error())
        self.assertEqual(addresses[0], "127.0.0.1")
        families = [":" in a for a in addresses]
        self.assertEqual(families, sorted(families), "IPv4 addresses come before IPv6 ones")
        self.assertEqual(self.client.last_error(), (0, ""))

    def test_cookie_round_trip(self):
        url = "https://a.example.com/"
        rc = self.client.set_cookies(url, ["sid=abc; Path=/; Secure; HttpOnly", "lang=en; Path=/"])
        self.assertEqual(rc, 0, self.client.last_error())
        header = self.client.cookie_header(url)
        self.assertIsNotNone(header, self.client.last_error())
        self.assertEqual(sorted(header.split("; ")), ["lang=en", "sid=abc"])
        self.assertEqual(self.client.delete_cookies(url), 2)
        self.assertEqual(self.client.cookie_header(url), "")

    def test_invalid_name_gives_invalid_params(self):
        rc, addresses = self.client.resolve("not a host..example")
        self.assertEqual(rc, INVALID_PARAMS)
        self.assertEqual(addresses, [])
        code, message = self.client.last_error()
        self.assertEqual(code, INVALID_PARAMS)
        self.assertTrue(message)

    def test_call_returns_result_json(self):
        import json
        status = json.loads(self.client.call("status"))
        self.assertIn("version", status)
        self.assertIsNone(self.client.call("status", "[1]"))
        self.assertEqual(self.client.last_error()[0], -errno.EINVAL)

    def test_prepare_request_gives_the_resolve_entry_and_the_cookie_header(self):
        self.assertEqual(self.client.set_cookies("http://localhost/", ["p=1; Path=/"]), 0, self.client.last_error())
        rc, entry, cookie = self.client.prepare_request("http://localhost:8080/page")
        self.assertEqual(rc, 0, self.client.last_error())
        self.assertTrue(entry.startswith("localhost:8080:127.0.0.1"), entry)
        self.assertEqual(cookie, "p=1")
        rc, entry, cookie = self.client.prepare_request("http://127.0.0.1:8080/")
        self.assertEqual((rc, entry), (0, None), "nothing to resolve for an IP address")
        self.assertEqual(self.client.prepare_request("ftp://localhost/"), (-errno.EINVAL, None, None))
        self.client.delete_cookies("http://localhost/")

    def test_prepare_request_host_puts_the_name_in_place_of_the_address(self):
        self.assertEqual(self.client.set_cookies("http://ctypes-host.example/", ["q=1; Path=/"]), 0)
        rc, url, entry, cookie, stale = self.client.prepare_request_host("http://127.0.0.7:8080/p?x",
                                                                         "ctypes-host.example")
        self.assertEqual(rc, 0, self.client.last_error())
        self.assertEqual((url, entry, cookie, stale),
                         ("http://ctypes-host.example:8080/p?x", "ctypes-host.example:8080:127.0.0.7", "q=1", 0))
        rc, url, entry, cookie, stale = self.client.prepare_request_host("http://localhost/", None, 1)
        self.assertEqual((rc, url, stale), (0, "http://localhost/", 0), self.client.last_error())
        self.assertTrue(entry.startswith("localhost:80:127.0.0.1"), entry)
        self.assertEqual(self.client.prepare_request_host("http://localhost/", "other.example"),
                         (-errno.EINVAL, None, None, None, 0))
        self.client.delete_cookies("http://ctypes-host.example/")

    def test_bad_arguments_are_errors_not_crashes(self):
        one = (ctypes.c_char_p * 1)(b"a=1")
        # (size_t)-1 used to kill the calling process with SIGILL.
        rc = self.lib.httpdns_handle_set_cookie(self.client.handle, b"https://a.example.com/", None, one,
                                                ctypes.c_size_t(-1).value)
        self.assertEqual(rc, -errno.E2BIG)
        self.assertIsNone(self.lib.httpdns_call(self.client.handle, b"\xff", None))
        self.assertEqual(self.client.last_error()[0], -errno.EILSEQ)
        closed = Client(self.lib, os.environ.get("HTTPDNSD_SOCKET"))
        closed.close()
        self.assertEqual(closed.resolve("localhost")[0], -errno.EINVAL)
        closed.close()

    def test_absent_daemon(self):
        absent = Client(self.lib, "/nonexistent-httpdnsd-dir/httpdnsd.sock")
        try:
            rc, addresses = absent.resolve("localhost")
            self.assertEqual(rc, -errno.ENOENT)
            self.assertEqual(addresses, [])
            self.assertIn("cannot connect", absent.last_error()[1])
        finally:
            absent.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
