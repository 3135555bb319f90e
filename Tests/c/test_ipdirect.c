/*
 * IP-direct requests with libcurl through httpdns_curl.h against real origins: an IP-literal
 * URL with its host name apart (HTTP and HTTPS), redirects across hosts, an address several
 * names share, dead and black-holed stale addresses, and stores the daemon refuses.
 *
 * Runs in the clients' test world (clients/testing/fixture.py: the fake upstream, origins on
 * 127.0.0.1-6 that log each request's SNI, Host and Cookie, a throwaway CA) with a daemon
 * configured for it, in the fixture's loopback-only network namespace: HTTPDNS_FIXTURE names
 * its fixture.json and HTTPDNSD_SOCKET the daemon (.ci/test's client_suite sets both). Without
 * HTTPDNS_FIXTURE it says so and passes nothing. Build and run with Tests/c/run.sh, from the
 * repository's top directory (the answers are rewritten with the fixture's own set_answers).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "httpdns_curl.h"

extern char **environ;

#include "check.h"

/* What fixture.json says. */
static struct {
    char dir[1024], ca[1024], records[1024];
    long http_port, https_port;
} world;

static httpdns_client *client;
static unsigned token_serial;

static const char *last_message(void) {
    const char *message = NULL;
    httpdns_last_error(client, &message);
    return message ? message : "(null)";
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t size = 0, capacity = 4096;
    char *text = malloc(capacity);
    size_t n;
    while (text != NULL && (n = fread(text + size, 1, capacity - size - 1, f)) > 0) {
        size += n;
        if (capacity - size < 2) text = realloc(text, capacity *= 2);
    }
    fclose(f);
    if (text != NULL) text[size] = '\0';
    return text;
}

/* The value of "key" in one JSON object's text: a malloc'd string (escapes taken literally,
   enough for these records), "" for a number's text, NULL for null or absence. */
static char *json_member(const char *object, const char *key) {
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(object, pattern);
    if (at == NULL) return NULL;
    at += strlen(pattern);
    while (*at == ' ') at++;
    if (strncmp(at, "null", 4) == 0) return NULL;
    if (*at != '"') {
        size_t length = strspn(at, "0123456789-");
        char *number = malloc(length + 1);
        memcpy(number, at, length);
        number[length] = '\0';
        return number;
    }
    at++;
    char *value = malloc(strlen(at) + 1);
    size_t i = 0;
    for (; *at != '\0' && *at != '"'; at++) {
        if (*at == '\\' && at[1] != '\0') at++;
        value[i++] = *at;
    }
    value[i] = '\0';
    return value;
}

static int read_world(const char *path) {
    char *text = read_file(path);
    if (text == NULL) return -1;
    char *dir = json_member(text, "dir"), *ca = json_member(text, "ca"), *records = json_member(text, "records");
    char *http = json_member(text, "httpPort"), *https = json_member(text, "httpsPort");
    int ok = dir && ca && records && http && https;
    if (ok) {
        snprintf(world.dir, sizeof world.dir, "%s", dir);
        snprintf(world.ca, sizeof world.ca, "%s", ca);
        snprintf(world.records, sizeof world.records, "%s", records);
        world.http_port = atol(http);
        world.https_port = atol(https);
    }
    free(dir), free(ca), free(records), free(http), free(https), free(text);
    return ok ? 0 : -1;
}

/* A path prefix unique to one test, to find its requests in the origins' records. */
static void new_token(char *token, size_t size, const char *name) {
    snprintf(token, size, "/c-%s-%ld-%u", name, (long)getpid(), ++token_serial);
}

/* The origins' record of the last request whose path holds token (malloc'd line), or NULL. */
static char *last_record(const char *token) {
    char *text = read_file(world.records);
    char *found = NULL;
    for (char *line = text ? strtok(text, "\n") : NULL; line != NULL; line = strtok(NULL, "\n")) {
        char *path = json_member(line, "path");
        if (path != NULL && strstr(path, token) != NULL) {
            free(found);
            found = malloc(strlen(line) + 1);
            strcpy(found, line);
        }
        free(path);
    }
    free(text);
    return found;
}

static int record_count(const char *token) {
    char *text = read_file(world.records);
    int count = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line != NULL; line = strtok(NULL, "\n")) {
        char *path = json_member(line, "path");
        count += path != NULL && strstr(path, token) != NULL;
        free(path);
    }
    free(text);
    return count;
}

/* Whether the record's member equals expected (NULL: is null). */
static int member_is(const char *record, const char *key, const char *expected) {
    char *value = record ? json_member(record, key) : NULL;
    int same = (value == NULL || expected == NULL) ? value == expected : strcmp(value, expected) == 0;
    free(value);
    return same;
}

static int member_contains(const char *record, const char *key, const char *part) {
    char *value = record ? json_member(record, key) : NULL;
    int contains = value != NULL && strstr(value, part) != NULL;
    free(value);
    return contains;
}

/* Makes the fake upstream answer answer_json ({"NAME": [...]} or {"NAME": {"ips": [...], "ttl": N}})
   through the fixture's own set_answers. */
static int set_answers(const char *answer_json) {
    char *argv[] = {"python3", "-c",
                    "import json, sys; sys.path.insert(0, 'clients/testing'); import fixture; "
                    "fixture.set_answers(sys.argv[1], json.loads(sys.argv[2]))",
                    world.dir, (char *)answer_json, NULL};
    pid_t pid;
    int status = 0;
    if (posix_spawnp(&pid, "python3", NULL, NULL, argv, environ) != 0) return -1;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static char *call(const char *method, const char *format, ...) {
    char params[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(params, sizeof params, format, arguments);
    va_end(arguments);
    char *result = httpdns_call(client, method, params);
    CHECK(result != NULL, "%s %s: %s", method, params, last_message());
    return result;
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

/* Leaves the daemon holding an expired answer [dead] for host while the upstream answers
   [alive]: answered with a 1 s TTL, then polled (showCache, which refreshes nothing) until the
   daemon's entry has expired, with a generous deadline. */
static int stale_then_moved(const char *host, const char *dead, const char *alive) {
    char answer[512], entry[256];
    snprintf(answer, sizeof answer, "{\"%s\": {\"ips\": [\"%s\"], \"ttl\": 1}}", host, dead);
    if (set_answers(answer) != 0) return -1;
    free(call("flushCache", "{\"host\":\"%s\"}", host));
    char **addrs = NULL;
    size_t count = 0;
    int rc = httpdns_resolve(client, host, &addrs, &count);
    int first_is_dead = rc == 0 && count == 1 && strcmp(addrs[0], dead) == 0;
    httpdns_free_addrs(addrs, count);
    if (!first_is_dead) return -1;
    snprintf(entry, sizeof entry, "{\"host\":\"%s\",\"family\":\"ipv4\",", host);
    int expired = 0;
    for (int i = 0; i < 600 && !expired; i++) {
        char *cache = httpdns_call(client, "showCache", NULL);
        char *at = cache ? strstr(cache, entry) : NULL;
        char *ttl = at ? json_member(at, "ttl") : NULL;
        expired = ttl != NULL && strcmp(ttl, "0") == 0;
        free(ttl);
        httpdns_free(cache);
        if (!expired) sleep_ms(100);
    }
    if (!expired) return -1;
    snprintf(answer, sizeof answer, "{\"%s\": [\"%s\"]}", host, alive);
    return set_answers(answer);
}

/* A libcurl handle for the fixture's origins: its CA, verification on, no proxy, no body shown. */
static size_t discard(char *data, size_t size, size_t n, void *user) {
    (void)data, (void)user;
    return size * n;
}

static CURL *new_easy(void) {
    CURL *easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_CAINFO, world.ca);
    curl_easy_setopt(easy, CURLOPT_CAPATH, (char *)NULL);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT, 60L);
    return easy;
}

static long status_of(CURL *easy) {
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static long port_of(const char *scheme) { return strcmp(scheme, "https") == 0 ? world.https_port : world.http_port; }

/* An IP-literal URL with the host name apart: libcurl connects to the IP, and SNI, Host, the
   certificate check and the jar use the name; the cookie comes back on the next request. */
static void test_ip_url_with_host(const char *scheme) {
    const char *host = "login.example.test", *address = "127.0.0.2";
    char token[128], url[512], expected_url[512], host_header[256];
    new_token(token, sizeof token, scheme);
    long port = port_of(scheme);
    snprintf(url, sizeof url, "%s://%s:%ld%s/set?cookie=c_%s%%3D1%%3B%%20Path%%3D%%2F", scheme, address, port, token,
             scheme);
    snprintf(expected_url, sizeof expected_url, "%s://%s:%ld%s/set?cookie=c_%s%%3D1%%3B%%20Path%%3D%%2F", scheme,
             host, port, token, scheme);
    snprintf(host_header, sizeof host_header, "%s:%ld", host, port);

    CURL *easy = new_easy();
    httpdns_curl_request request;
    int rc = httpdns_curl_perform(client, easy, url, host, 0, &request);
    CHECK(rc == 0, "%s: perform returned %d (%s): %s", scheme, rc, rc > 0 ? curl_easy_strerror((CURLcode)rc) : "",
          last_message());
    CHECK(request.url != NULL && strcmp(request.url, expected_url) == 0, "requested %s", request.url);
    CHECK(!request.stale && !request.refreshed, "stale %d refreshed %d", request.stale, request.refreshed);
    httpdns_curl_request_cleanup(&request);
    char *record = last_record(token);
    CHECK(record != NULL, "%s: the origin saw no request", scheme);
    CHECK(member_is(record, "server", address), "%s: reached %s", scheme, record);
    CHECK(member_is(record, "host", host_header), "%s: Host: %s", scheme, record);
    CHECK(member_is(record, "sni", strcmp(scheme, "https") == 0 ? host : NULL), "%s: SNI: %s", scheme, record);
    free(record);
    long verified = -1;
    curl_easy_getinfo(easy, CURLINFO_SSL_VERIFYRESULT, &verified);
    CHECK(verified == 0, "%s: certificate verification result %ld", scheme, verified);

    /* Stored under the name, not the address. */
    char *listed = call("listCookies", "{\"domain\":\"%s\"}", host);
    char name[32];
    snprintf(name, sizeof name, "\"name\":\"c_%s\"", scheme);
    CHECK(listed != NULL && strstr(listed, name) != NULL, "%s: not in %s's jar: %s", scheme, host, listed);
    httpdns_free(listed);
    listed = call("listCookies", "{\"domain\":\"%s\"}", address);
    CHECK(listed != NULL && strstr(listed, name) == NULL, "%s: keyed by the address: %s", scheme, listed);
    httpdns_free(listed);

    /* Sent back on the next request to the address for the name. */
    snprintf(url, sizeof url, "%s://%s:%ld%s/again/echo", scheme, address, port, token);
    rc = httpdns_curl_perform(client, easy, url, host, 0, &request);
    CHECK(rc == 0 && status_of(easy) == 200, "%s: second request %d: %s", scheme, rc, last_message());
    httpdns_curl_request_cleanup(&request);
    record = last_record(token);
    char cookie[32];
    snprintf(cookie, sizeof cookie, "c_%s=1", scheme);
    CHECK(member_contains(record, "cookie", cookie), "%s: Cookie not sent back: %s", scheme, record);
    free(record);
    curl_easy_cleanup(easy);
}

/* The certificate is checked for the name: one it does not cover fails (and would pass for no
   one else: the certificate holds no IP address). */
static void test_certificate_is_checked_for_the_name(void) {
    char token[128], url[512];
    new_token(token, sizeof token, "wrongcert");
    snprintf(url, sizeof url, "https://127.0.0.4:%ld%s/echo", world.https_port, token);
    CURL *easy = new_easy();
    httpdns_curl_request request;
    int rc = httpdns_curl_perform(client, easy, url, "wrongcert.example.test", 0, &request);
    CHECK(rc == CURLE_PEER_FAILED_VERIFICATION && request.result == CURLE_PEER_FAILED_VERIFICATION,
          "a name outside the certificate gave %d", rc);
    httpdns_curl_request_cleanup(&request);
    CHECK(record_count(token) == 0, "a request went out on a certificate for another name");
    curl_easy_cleanup(easy);
}

/* A redirect from the IP-direct hop: a relative Location stays on the name (its cookie goes
   along), one to another host carries that host's own name and gets none of the first one's. */
static void test_redirects_carry_their_own_host(void) {
    char token[128], url[1024], *next = NULL;
    new_token(token, sizeof token, "redirect");
    snprintf(url, sizeof url,
             "https://127.0.0.2:%ld%s/redirect?status=302&cookie=hop%%3D1&to=https%%3A%%2F%%2Fapp.example.test%%3A%ld%s%%2Fapp%%2Fecho",
             world.https_port, token, world.https_port, token);
    CURL *easy = new_easy();
    httpdns_curl_request request;
    int rc = httpdns_curl_perform(client, easy, url, "login.example.test", 0, &request);
    CHECK(rc == 0 && status_of(easy) == 302, "first hop %d, status %ld: %s", rc, status_of(easy), last_message());
    struct curl_header *location = NULL;
    CHECK(curl_easy_header(easy, "Location", 0, CURLH_HEADER, -1, &location) == CURLHE_OK, "no Location");
    if (location != NULL) {
        CHECK(httpdns_parse_url(location->value, request.url, &next, NULL) == 0, "Location %s", location->value);
    }
    httpdns_curl_request_cleanup(&request);
    if (next == NULL) {
        curl_easy_cleanup(easy);
        return;
    }
    rc = httpdns_curl_perform(client, easy, next, NULL, 0, &request);
    CHECK(rc == 0 && status_of(easy) == 200, "second hop %s: %d: %s", next, rc, last_message());
    httpdns_curl_request_cleanup(&request);
    httpdns_free(next);
    char *record = last_record(token);
    CHECK(member_is(record, "server", "127.0.0.3"), "the other host was reached at %s", record);
    CHECK(member_is(record, "sni", "app.example.test"), "SNI %s", record);
    CHECK(member_contains(record, "host", "app.example.test:"), "Host %s", record);
    CHECK(!member_contains(record, "cookie", "hop=1"), "the first host's cookie went to the other: %s", record);
    free(record);

    /* A relative Location is resolved against the name, and stays with it. */
    snprintf(url, sizeof url, "https://127.0.0.2:%ld%s/redirect?status=302&to=%s%%2Fback%%2Fecho", world.https_port,
             token, token);
    rc = httpdns_curl_perform(client, easy, url, "login.example.test", 0, &request);
    CHECK(rc == 0 && status_of(easy) == 302, "relative redirect %d", rc);
    location = NULL;
    next = NULL;
    if (curl_easy_header(easy, "Location", 0, CURLH_HEADER, -1, &location) == CURLHE_OK)
        httpdns_parse_url(location->value, request.url, &next, NULL);
    httpdns_curl_request_cleanup(&request);
    CHECK(next != NULL && strncmp(next, "https://login.example.test:", 27) == 0, "relative Location became %s", next);
    if (next != NULL) {
        rc = httpdns_curl_perform(client, easy, next, NULL, 0, &request);
        CHECK(rc == 0, "relative hop: %d: %s", rc, last_message());
        httpdns_curl_request_cleanup(&request);
        record = last_record(token);
        CHECK(member_is(record, "sni", "login.example.test") && member_contains(record, "cookie", "hop=1"),
              "the name's own hop: %s", record);
        free(record);
    }
    httpdns_free(next);
    curl_easy_cleanup(easy);
}

/* An address two of the caller's names share, without host: refused before anything is sent,
   naming both names and what to pass; with host it goes. */
static void test_shared_address_without_host(void) {
    const char *names[] = {"py.example.test", "go.example.test"};
    for (size_t i = 0; i < 2; i++) {
        char **addrs = NULL;
        size_t count = 0;
        CHECK(httpdns_resolve(client, names[i], &addrs, &count) == 0, "resolve %s: %s", names[i], last_message());
        httpdns_free_addrs(addrs, count);
    }
    char token[128], url[512];
    new_token(token, sizeof token, "shared");
    snprintf(url, sizeof url, "http://127.0.0.4:%ld%s/echo", world.http_port, token);

    char *request_url = (char *)1, *entry = (char *)1, *cookie = (char *)1;
    int stale = 7;
    int rc = httpdns_prepare_request_host(client, url, NULL, 0, &request_url, &entry, &cookie, &stale);
    const char *message = last_message();
    CHECK(rc == -ENOTUNIQ, "prepare gave %d: %s", rc, message);
    CHECK(request_url == NULL && entry == NULL && cookie == NULL && stale == 0, "outputs not cleared");
    CHECK(strstr(message, "127.0.0.4") && strstr(message, names[0]) && strstr(message, names[1]) &&
              strstr(message, "host"),
          "the message names neither the candidates nor host: %s", message);
    /* Even when no Cookie header is wanted. */
    rc = httpdns_prepare_request_host(client, url, NULL, 0, NULL, NULL, NULL, NULL);
    CHECK(rc == -ENOTUNIQ, "prepare without outputs gave %d", rc);

    CURL *easy = new_easy();
    httpdns_curl_request request;
    rc = httpdns_curl_perform(client, easy, url, NULL, 0, &request);
    CHECK(rc == -ENOTUNIQ, "perform gave %d", rc);
    CHECK(record_count(token) == 0, "a request was sent for an ambiguous address");

    /* The older calls keep their code and get the same message. */
    char *header = httpdns_get_cookie_header(client, url, NULL);
    CHECK(header == NULL && httpdns_last_error(client, NULL) == HTTPDNS_E_INVALID_PARAMS, "get_cookie_header");
    CHECK(strstr(last_message(), names[0]) && strstr(last_message(), names[1]), "message %s", last_message());

    rc = httpdns_curl_perform(client, easy, url, names[1], 0, &request);
    CHECK(rc == 0 && status_of(easy) == 200, "with host: %d: %s", rc, last_message());
    httpdns_curl_request_cleanup(&request);
    char *record = last_record(token);
    CHECK(member_is(record, "server", "127.0.0.4") && member_contains(record, "host", names[1]), "%s", record);
    free(record);
    curl_easy_cleanup(easy);
}

/* A stale answer whose address is dead: the first perform still reaches the new address. */
static void test_stale_dead_address(const char *host, const char *dead, long connect_timeout_ms) {
    CHECK(stale_then_moved(host, dead, "127.0.0.4") == 0, "%s: could not leave a stale answer at %s", host, dead);
    char token[128], url[512];
    new_token(token, sizeof token, "stale");
    snprintf(url, sizeof url, "http://%s:%ld%s/set?cookie=fresh%%3D1", host, world.http_port, token);
    CURL *easy = new_easy();
    if (connect_timeout_ms > 0) curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    httpdns_curl_request request;
    int rc = httpdns_curl_perform(client, easy, url, NULL, 0, &request);
    CHECK(rc == 0 && status_of(easy) == 200, "%s (%s): perform %d (%s): %s", host, dead, rc,
          rc > 0 ? curl_easy_strerror((CURLcode)rc) : "", last_message());
    CHECK(request.refreshed == 1 && request.stale == 0, "%s: refreshed %d stale %d", host, request.refreshed,
          request.stale);
    httpdns_curl_request_cleanup(&request);
    char *record = last_record(token);
    CHECK(member_is(record, "server", "127.0.0.4"), "%s: reached %s", host, record);
    free(record);
    char *listed = call("listCookies", "{\"domain\":\"%s\"}", host);
    CHECK(listed != NULL && strstr(listed, "\"name\":\"fresh\""), "%s: cookie not stored: %s", host, listed);
    httpdns_free(listed);
    curl_easy_cleanup(easy);
}

/* HTTPDNS_NO_STALE on its own: an expired answer is not served. */
static void test_no_stale_flag(void) {
    const char *host = "nostale-c.example.test";
    CHECK(stale_then_moved(host, "127.0.0.9", "127.0.0.5") == 0, "no stale answer left");
    char url[256], *entry = NULL;
    int stale = -1;
    snprintf(url, sizeof url, "http://%s/", host);
    int rc = httpdns_prepare_request_host(client, url, NULL, HTTPDNS_NO_STALE, NULL, &entry, NULL, &stale);
    CHECK(rc == 0 && entry != NULL && strcmp(entry, "nostale-c.example.test:80:127.0.0.5") == 0 && stale == 0,
          "fresh entry %s, stale %d", entry, stale);
    httpdns_free(entry);
}

/* An address with a listener whose accept queue is full: SYNs to it go unanswered, as to a
   black-holed address. Returns the listener and its filler, or -1 when this kernel answers anyway. */
static int black_hole(const char *address, long port, int *filler) {
    struct sockaddr_in at = {0};
    at.sin_family = AF_INET;
    at.sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, address, &at.sin_addr);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&at, sizeof at) != 0 || listen(listener, 0) != 0) {
        if (listener >= 0) close(listener);
        return -1;
    }
    *filler = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*filler, (struct sockaddr *)&at, sizeof at) != 0) {
        close(*filler), close(listener);
        return -1;
    }
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    fcntl(probe, F_SETFL, O_NONBLOCK);
    int answered = connect(probe, (struct sockaddr *)&at, sizeof at) == 0;
    if (!answered && errno == EINPROGRESS) {
        struct pollfd wait = {probe, POLLOUT, 0};
        answered = poll(&wait, 1, 300) != 0;
    }
    close(probe);
    if (answered) {
        close(*filler), close(listener);
        return -1;
    }
    return listener;
}

static void test_stale_black_holed_address(void) {
    int filler = -1;
    int listener = black_hole("127.0.0.10", world.http_port, &filler);
    if (listener < 0) {
        printf("test_ipdirect: black-hole case skipped: connections to a full accept queue are answered here\n");
        return;
    }
    test_stale_dead_address("blackhole-c.example.test", "127.0.0.10", 1000);
    close(filler);
    close(listener);
}

/* The daemon refuses to store a response's cookies: perform says so, nothing is stored. */
static void test_refused_store_is_an_error(void) {
    char token[128];
    new_token(token, sizeof token, "refused");
    /* More Set-Cookie values than one handleSetCookie takes (256). */
    size_t size = 64 + 300 * 24;
    char *url = malloc(size);
    int length = snprintf(url, size, "http://127.0.0.3:%ld%s/set?", world.http_port, token);
    for (int i = 0; i < 300; i++)
        length += snprintf(url + length, size - (size_t)length, "%scookie=many%d%%3D1", i ? "&" : "", i);
    CURL *easy = new_easy();
    httpdns_curl_request request;
    int rc = httpdns_curl_perform(client, easy, url, "app.example.test", 0, &request);
    CHECK(rc == HTTPDNS_E_LIMIT_EXCEEDED, "a refused store gave %d", rc);
    CHECK(request.result == CURLE_OK && status_of(easy) == 200, "the transfer itself: %d", (int)request.result);
    CHECK(httpdns_last_error(client, NULL) == HTTPDNS_E_LIMIT_EXCEEDED && strlen(last_message()) > 0, "last_error %s",
          last_message());
    httpdns_curl_request_cleanup(&request);
    char *listed = call("listCookies", "{\"domain\":\"app.example.test\"}");
    CHECK(listed != NULL && strstr(listed, "many1") == NULL, "stored anyway: %.200s", listed);
    httpdns_free(listed);

    /* More than one call takes at all: refused whole, not cut. */
    free(url);
    size = 64 + (HTTPDNS_MAX_SET_COOKIE + 1) * 24;
    url = malloc(size);
    length = snprintf(url, size, "http://127.0.0.3:%ld%s/set?", world.http_port, token);
    for (int i = 0; i <= HTTPDNS_MAX_SET_COOKIE; i++)
        length += snprintf(url + length, size - (size_t)length, "%scookie=x%d%%3D1", i ? "&" : "", i);
    rc = httpdns_curl_perform(client, easy, url, "app.example.test", 0, &request);
    CHECK(rc == -E2BIG && request.result == CURLE_OK, "%d Set-Cookie values gave %d", HTTPDNS_MAX_SET_COOKIE + 1, rc);
    httpdns_curl_request_cleanup(&request);
    free(url);
    curl_easy_cleanup(easy);
}

/* What the host argument may be. */
static void test_host_argument(void) {
    char url[256], *request_url = (char *)1, *entry = (char *)1;
    snprintf(url, sizeof url, "https://127.0.0.2:%ld/x", world.https_port);
    const char *not_names[] = {"", "127.0.0.3", "[::1]", "a.example:8443", "a.example/x", "u@a.example", "a b"};
    for (size_t i = 0; i < sizeof not_names / sizeof not_names[0]; i++) {
        int rc = httpdns_prepare_request_host(client, url, not_names[i], 0, &request_url, &entry, NULL, NULL);
        CHECK(rc == -EINVAL, "host '%s' gave %d", not_names[i], rc);
        CHECK(request_url == NULL && entry == NULL, "outputs set for host '%s'", not_names[i]);
    }
    CHECK(httpdns_prepare_request_host(client, "https://login.example.test/", "app.example.test", 0, NULL, NULL,
                                       NULL, NULL) == -EINVAL,
          "a name URL with another host");
    CHECK(strstr(last_message(), "app.example.test") != NULL, "message %s", last_message());
    CHECK(httpdns_prepare_request_host(client, url, "login.example.test", 0x80, NULL, NULL, NULL, NULL) == -EINVAL,
          "unknown flags");

    /* The name's parser form; an IPv6 address is bracketed in the entry; nothing is resolved. */
    int stale = -1;
    int rc = httpdns_prepare_request_host(client, "https://[::1]:8443/a?b", "B\xc3\xbc" "cher.Example", 0,
                                          &request_url, &entry, NULL, &stale);
    CHECK(rc == 0, "IPv6 with host: %d: %s", rc, last_message());
    if (rc == 0) {
        CHECK(strcmp(request_url, "https://xn--bcher-kva.example:8443/a?b") == 0, "url %s", request_url);
        CHECK(strcmp(entry, "xn--bcher-kva.example:8443:[::1]") == 0, "entry %s", entry);
        CHECK(stale == 0, "stale %d", stale);
        httpdns_free(request_url);
        httpdns_free(entry);
    }
    /* The same host as the URL's own is accepted. */
    rc = httpdns_prepare_request_host(client, "http://login.example.test/", "LOGIN.example.test", 0, &request_url,
                                      &entry, NULL, NULL);
    CHECK(rc == 0 && strcmp(entry, "login.example.test:80:127.0.0.2") == 0, "same host: %d", rc);
    if (rc == 0) {
        httpdns_free(request_url);
        httpdns_free(entry);
    }
}

int main(void) {
    const char *fixture = getenv("HTTPDNS_FIXTURE");
    if (fixture == NULL || fixture[0] == '\0') {
        printf("test_ipdirect: skipped: needs HTTPDNS_FIXTURE (.ci/test runs it in the clients' test world)\n");
        return 0;
    }
    if (read_world(fixture) != 0) {
        fprintf(stderr, "test_ipdirect: cannot read %s\n", fixture);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    client = httpdns_open(getenv("HTTPDNSD_SOCKET"));
    if (client == NULL) {
        fprintf(stderr, "httpdns_open failed\n");
        return 2;
    }
    test_host_argument();
    test_ip_url_with_host("http");
    test_ip_url_with_host("https");
    test_certificate_is_checked_for_the_name();
    test_redirects_carry_their_own_host();
    test_shared_address_without_host();
    test_no_stale_flag();
    test_stale_dead_address("stale-c.example.test", "127.0.0.9", 0);
    test_stale_black_holed_address();
    test_refused_store_is_an_error();
    httpdns_close(client);
    curl_global_cleanup();
    return check_report("test_ipdirect");
}
