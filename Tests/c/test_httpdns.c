/*
 * End-to-end test of libhttpdns.so through its public header, against a running daemon.
 * HTTPDNSD_SOCKET names the daemon's socket. Build and run with Tests/c/run.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpdns.h"

#include "check.h"

static const char *last_message(httpdns_client *c) {
    const char *message = NULL;
    httpdns_last_error(c, &message);
    return message ? message : "(null)";
}

static void test_version(void) {
    const char *version = httpdns_version();
    CHECK(version != NULL && strlen(version) > 0, "empty version");
}

static void test_resolve_localhost(httpdns_client *c) {
    char **addrs = NULL;
    size_t count = 0;
    int rc = httpdns_resolve(c, "localhost", &addrs, &count);
    CHECK(rc == 0, "resolve localhost returned %d: %s", rc, last_message(c));
    CHECK(count >= 1 && addrs != NULL, "no addresses for localhost");
    if (count >= 1 && addrs != NULL) {
        CHECK(strcmp(addrs[0], "127.0.0.1") == 0, "first address is %s, not 127.0.0.1 (IPv4 first)", addrs[0]);
        int seen_v6 = 0;
        for (size_t i = 0; i < count; i++) {
            int is_v6 = strchr(addrs[i], ':') != NULL;
            CHECK(!(seen_v6 && !is_v6), "IPv4 address %s after an IPv6 one", addrs[i]);
            seen_v6 |= is_v6;
        }
    }
    httpdns_free_addrs(addrs, count);
    CHECK(httpdns_last_error(c, NULL) == 0, "last_error after success is not 0");
}

static void test_cookie_round_trip(httpdns_client *c) {
    const char *url = "https://a.example.com/";
    const char *set_cookie[] = {"sid=abc; Path=/; Secure; HttpOnly", "lang=en; Path=/"};
    int rc = httpdns_handle_set_cookie(c, url, NULL, set_cookie, 2);
    CHECK(rc == 0, "handle_set_cookie returned %d: %s", rc, last_message(c));

    char *header = httpdns_get_cookie_header(c, url, NULL);
    CHECK(header != NULL, "get_cookie_header failed: %s", last_message(c));
    if (header) {
        CHECK(strstr(header, "sid=abc") != NULL, "header '%s' lacks sid=abc", header);
        CHECK(strstr(header, "lang=en") != NULL, "header '%s' lacks lang=en", header);
    }
    httpdns_free(header);

    long deleted = httpdns_delete_cookies(c, url);
    CHECK(deleted == 2, "delete_cookies returned %ld: %s", deleted, last_message(c));

    header = httpdns_get_cookie_header(c, url, NULL);
    CHECK(header != NULL && header[0] == '\0', "header after delete is '%s'", header ? header : "(null)");
    httpdns_free(header);
}

static void test_call(httpdns_client *c) {
    char *result = httpdns_call(c, "status", NULL);
    CHECK(result != NULL, "status failed: %s", last_message(c));
    if (result) CHECK(strstr(result, "\"version\"") != NULL, "status result lacks version: %s", result);
    httpdns_free(result);

    result = httpdns_call(c, "status", "{not json");
    CHECK(result == NULL, "bad params_json accepted");
    CHECK(httpdns_last_error(c, NULL) == -EINVAL, "bad params_json gave %d", httpdns_last_error(c, NULL));

    result = httpdns_call(c, "noSuchMethod", "{}");
    CHECK(result == NULL, "unknown method returned a result");
    CHECK(httpdns_last_error(c, NULL) == HTTPDNS_E_METHOD_NOT_FOUND, "unknown method gave %d",
          httpdns_last_error(c, NULL));
}

static void test_invalid_name(httpdns_client *c) {
    char **addrs = (char **)1;
    size_t count = 99;
    int rc = httpdns_resolve(c, "not a host..example", &addrs, &count);
    CHECK(rc == HTTPDNS_E_INVALID_PARAMS, "resolve of an invalid name returned %d", rc);
    CHECK(addrs == NULL && count == 0, "outputs not cleared on failure");
    const char *message = NULL;
    CHECK(httpdns_last_error(c, &message) == HTTPDNS_E_INVALID_PARAMS, "last_error code differs");
    CHECK(message != NULL && strlen(message) > 0, "no error message");
}

static void test_unreachable(void) {
    httpdns_client *c = httpdns_open("/nonexistent-httpdnsd-dir/httpdnsd.sock");
    CHECK(c != NULL, "open failed");
    char **addrs = NULL;
    size_t count = 0;
    int rc = httpdns_resolve(c, "localhost", &addrs, &count);
    CHECK(rc == -ENOENT, "resolve without a daemon returned %d, not -ENOENT", rc);
    CHECK(strstr(last_message(c), "cannot connect") != NULL, "message: %s", last_message(c));
    httpdns_close(c);
}

/* httpdns_parse_url: the daemon's URL parser, no daemon needed. */
static void test_parse_url(void) {
    char *url = NULL, *host = NULL;
    int rc = httpdns_parse_url("HTTP://User@WWW.Example.COM:80/a/./b/../c d?q#f", NULL, &url, &host);
    CHECK(rc == 0, "parse_url returned %d", rc);
    if (rc == 0) {
        CHECK(strcmp(url, "http://User@www.example.com/a/c%20d?q#f") == 0, "serialized as %s", url);
        CHECK(strcmp(host, "www.example.com") == 0, "host %s", host);
    }
    httpdns_free(url);
    httpdns_free(host);

    /* A Location against the URL that sent it; host only. */
    rc = httpdns_parse_url("../x\\y", "https://a.example/dir/sub/page", &url, NULL);
    CHECK(rc == 0 && strcmp(url, "https://a.example/dir/x/y") == 0, "relative: %d %s", rc, rc == 0 ? url : "");
    httpdns_free(url);
    rc = httpdns_parse_url("https://[2001:DB8::1]:8443/", NULL, NULL, &host);
    CHECK(rc == 0 && strcmp(host, "2001:db8::1") == 0, "IPv6 host: %d", rc);
    httpdns_free(host);
    rc = httpdns_parse_url("http://b\xc3\xbc" "cher.example/", NULL, NULL, &host);
    CHECK(rc == 0 && strcmp(host, "xn--bcher-kva.example") == 0, "IDN host: %d", rc);
    httpdns_free(host);

    /* Hosts that libcurl would read otherwise: refused, outputs cleared. */
    const char *ambiguous[] = {"http://bank.example\\@attacker.example/", "http://a@b@attacker.example/",
                               "http://%62ank.example/", "http://0x7f.1/"};
    for (size_t i = 0; i < sizeof ambiguous / sizeof ambiguous[0]; i++) {
        url = host = (char *)1;
        rc = httpdns_parse_url(ambiguous[i], NULL, &url, &host);
        CHECK(rc == -ENOTUNIQ, "%s gave %d", ambiguous[i], rc);
        CHECK(url == NULL && host == NULL, "outputs set for %s", ambiguous[i]);
    }
    rc = httpdns_parse_url("//bank.example\\@attacker.example/", "http://a.example/", &url, NULL);
    CHECK(rc == -ENOTUNIQ, "relative ambiguous Location gave %d", rc);
    CHECK(httpdns_parse_url("ftp://a.example/", NULL, &url, NULL) == -EINVAL, "ftp accepted");
    CHECK(httpdns_parse_url(NULL, NULL, &url, NULL) == -EINVAL, "NULL url accepted");
    CHECK(httpdns_parse_url("/x", "nope", &url, NULL) == -EINVAL, "bad base accepted");
    CHECK(httpdns_parse_url("http://a\xff/", NULL, &url, NULL) == -EILSEQ, "non-UTF-8 accepted");
}

int main(void) {
    const char *socket_path = getenv("HTTPDNSD_SOCKET");
    httpdns_client *c = httpdns_open(socket_path);
    if (c == NULL) {
        fprintf(stderr, "httpdns_open failed\n");
        return 2;
    }
    test_version();
    test_parse_url();
    test_resolve_localhost(c);
    test_cookie_round_trip(c);
    test_call(c);
    test_invalid_name(c);
    test_unreachable();
    httpdns_close(c);
    httpdns_close(NULL);
    return check_report("test_httpdns");
}
