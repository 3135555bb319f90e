/*
 * Every entry point of libhttpdns.so with bad arguments: NULL and closed handles, NULL and
 * non-UTF-8 strings, huge counts, then a seeded fuzz loop. Each case runs in a child process,
 * so a trap (SIGILL from a Swift precondition, SIGSEGV) is a failed case, not the end of the
 * test. HTTPDNSD_SOCKET names a running daemon. Build and run with Tests/c/run.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "httpdns.h"

static int passed, failed;
static const char *socket_path;

/* Inside a child: a check that fails ends the child with status 1 and says why. */
#define EXPECT(cond, ...)                                                         \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "  %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            _exit(1);                                                             \
        }                                                                         \
    } while (0)

/* Runs one case in a child process and counts it. */
static void run_case(const char *name, void (*body)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        body();
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        failed++;
        fprintf(stderr, "FAIL %s: killed by signal %d (%s)\n", name, WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) != 0) {
        failed++;
        fprintf(stderr, "FAIL %s\n", name);
    } else {
        passed++;
    }
}

static const char not_utf8[] = {'a', (char)0xff, (char)0xfe, 'b', 0};
static const char *url = "https://bad-args.example.com/";

static int last_code(httpdns_client *c) { return httpdns_last_error(c, NULL); }

static void case_open_and_close(void) {
    errno = 0;
    EXPECT(httpdns_open(not_utf8) == NULL && errno == EILSEQ, "open(not UTF-8) gave a handle or errno %d", errno);
    httpdns_close(NULL);
    httpdns_close((httpdns_client *)(uintptr_t)0x1234); /* never a handle: ignored, not dereferenced */
    httpdns_client *c = httpdns_open(socket_path);
    EXPECT(c != NULL, "open failed");
    httpdns_close(c);
    httpdns_close(c); /* twice */
}

static void case_closed_and_unknown_handles(void) {
    httpdns_client *c = httpdns_open(socket_path);
    httpdns_close(c);
    httpdns_client *bogus = (httpdns_client *)(uintptr_t)0xdeadbeef;
    httpdns_client *handles[] = {NULL, c, bogus};
    for (size_t i = 0; i < sizeof handles / sizeof handles[0]; i++) {
        httpdns_client *h = handles[i];
        char **addrs = (char **)1;
        size_t n = 7;
        EXPECT(httpdns_resolve(h, "localhost", &addrs, &n) == -EINVAL, "resolve on handle %zu", i);
        EXPECT(addrs == NULL && n == 0, "resolve outputs not cleared");
        EXPECT(httpdns_call(h, "status", NULL) == NULL, "call on handle %zu", i);
        EXPECT(httpdns_get_cookie_header(h, url, NULL) == NULL, "get_cookie_header on handle %zu", i);
        const char *one[] = {"a=b"};
        EXPECT(httpdns_handle_set_cookie(h, url, NULL, one, 1) == -EINVAL, "handle_set_cookie on handle %zu", i);
        EXPECT(httpdns_delete_cookies(h, url) == -EINVAL, "delete_cookies on handle %zu", i);
        char *entry = (char *)1, *cookie = (char *)1;
        EXPECT(httpdns_prepare_request(h, url, &entry, &cookie) == -EINVAL, "prepare_request on handle %zu", i);
        EXPECT(entry == NULL && cookie == NULL, "prepare_request outputs not cleared");
        char *request_url = (char *)1;
        int stale = 7;
        entry = cookie = (char *)1;
        EXPECT(httpdns_prepare_request_host(h, url, NULL, 0, &request_url, &entry, &cookie, &stale) == -EINVAL,
               "prepare_request_host on handle %zu", i);
        EXPECT(request_url == NULL && entry == NULL && cookie == NULL && stale == 0,
               "prepare_request_host outputs not cleared");
        const char *message = "x";
        EXPECT(httpdns_last_error(h, &message) == -EINVAL && message == NULL, "last_error on handle %zu", i);
        EXPECT(httpdns_last_error(h, NULL) == -EINVAL, "last_error(NULL message) on handle %zu", i);
    }
}

static void case_null_strings(void) {
    httpdns_client *c = httpdns_open(socket_path);
    char **addrs;
    size_t n;
    EXPECT(httpdns_call(c, NULL, NULL) == NULL && last_code(c) == -EINVAL, "call(NULL method): %d", last_code(c));
    EXPECT(httpdns_resolve(c, NULL, &addrs, &n) == -EINVAL, "resolve(NULL host)");
    EXPECT(httpdns_resolve(c, "localhost", NULL, &n) == -EINVAL, "resolve(NULL addrs)");
    EXPECT(httpdns_resolve(c, "localhost", &addrs, NULL) == -EINVAL, "resolve(NULL count)");
    EXPECT(httpdns_get_cookie_header(c, NULL, NULL) == NULL && last_code(c) == -EINVAL, "get_cookie_header(NULL)");
    EXPECT(httpdns_handle_set_cookie(c, NULL, NULL, NULL, 0) == -EINVAL, "handle_set_cookie(NULL url)");
    EXPECT(httpdns_delete_cookies(c, NULL) == -EINVAL, "delete_cookies(NULL)");
    EXPECT(httpdns_prepare_request(c, NULL, NULL, NULL) == -EINVAL, "prepare_request(NULL url)");
    EXPECT(httpdns_prepare_request_host(c, NULL, "a.example", 0, NULL, NULL, NULL, NULL) == -EINVAL,
           "prepare_request_host(NULL url)");
    const char *message = NULL;
    EXPECT(httpdns_last_error(c, &message) == -EINVAL && message != NULL && strlen(message) > 0, "no message");
    httpdns_close(c);
}

static void case_not_utf8(void) {
    httpdns_client *c = httpdns_open(socket_path);
    char **addrs;
    size_t n;
    EXPECT(httpdns_call(c, not_utf8, NULL) == NULL && last_code(c) == -EILSEQ, "call(method): %d", last_code(c));
    char params[64];
    snprintf(params, sizeof params, "{\"host\":\"%s\"}", not_utf8);
    EXPECT(httpdns_call(c, "resolve", params) == NULL && last_code(c) == -EILSEQ, "call(params): %d", last_code(c));
    EXPECT(httpdns_resolve(c, not_utf8, &addrs, &n) == -EILSEQ, "resolve");
    EXPECT(httpdns_get_cookie_header(c, not_utf8, NULL) == NULL && last_code(c) == -EILSEQ, "get_cookie_header url");
    EXPECT(httpdns_get_cookie_header(c, url, not_utf8) == NULL && last_code(c) == -EILSEQ, "get_cookie_header host");
    const char *values[] = {"a=1", not_utf8};
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, values, 2) == -EILSEQ, "handle_set_cookie value");
    EXPECT(httpdns_handle_set_cookie(c, not_utf8, NULL, values, 1) == -EILSEQ, "handle_set_cookie url");
    EXPECT(httpdns_delete_cookies(c, not_utf8) == -EILSEQ, "delete_cookies");
    EXPECT(httpdns_prepare_request(c, not_utf8, NULL, NULL) == -EILSEQ, "prepare_request");
    EXPECT(httpdns_prepare_request_host(c, not_utf8, NULL, 0, NULL, NULL, NULL, NULL) == -EILSEQ,
           "prepare_request_host url");
    EXPECT(httpdns_prepare_request_host(c, "http://127.0.0.1/", not_utf8, 0, NULL, NULL, NULL, NULL) == -EILSEQ,
           "prepare_request_host host");
    httpdns_close(c);
}

static void case_huge_counts(void) {
    httpdns_client *c = httpdns_open(socket_path);
    const char *one[] = {"a=1; Path=/"};
    /* The count that used to kill the caller with SIGILL. */
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, one, (size_t)-1) == -E2BIG, "n = SIZE_MAX");
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, one, SIZE_MAX / 2) == -E2BIG, "n = SIZE_MAX/2");
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, one, (size_t)1 << 62) == -E2BIG, "n = 2^62");
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, one, HTTPDNS_MAX_SET_COOKIE + 1) == -E2BIG, "n = max + 1");
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, NULL, 3) == -EINVAL, "NULL array, n = 3");
    const char *with_null[] = {"a=1", NULL};
    EXPECT(httpdns_handle_set_cookie(c, url, NULL, with_null, 2) == -EINVAL, "NULL element");
    /* An empty list is the daemon's to judge, not a crash. */
    int rc = httpdns_handle_set_cookie(c, url, NULL, NULL, 0);
    EXPECT(rc == 0 || rc == HTTPDNS_E_INVALID_PARAMS, "n = 0 gave %d", rc);

    /* Freeing an address array never runs past its end, whatever count is given. */
    char **addrs = NULL;
    size_t n = 0;
    EXPECT(httpdns_resolve(c, "localhost", &addrs, &n) == 0 && n > 0, "resolve localhost");
    httpdns_free_addrs(addrs, (size_t)-1);
    httpdns_free_addrs(NULL, 5);
    httpdns_free(NULL);
    httpdns_close(c);
}

static void case_params_and_urls(void) {
    httpdns_client *c = httpdns_open(socket_path);
    const char *bad_params[] = {"", "[1]", "\"s\"", "{", "{\"a\":1}x", "null", "{\"a\":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}"};
    for (size_t i = 0; i < sizeof bad_params / sizeof bad_params[0]; i++) {
        char *result = httpdns_call(c, "status", bad_params[i]);
        int code = last_code(c);
        EXPECT(i == 6 ? (result != NULL || code < 0) : (result == NULL && code == -EINVAL), "params '%s': %d",
               bad_params[i], code);
        httpdns_free(result);
    }
    const char *bad_urls[] = {"", "ftp://x/", "http://", "https://[::1", "http://a:99999/", "http://a:-1/", "mailto:a@b",
                              "http://::1/"};
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        char *entry = (char *)1, *cookie = (char *)1;
        EXPECT(httpdns_prepare_request(c, bad_urls[i], &entry, &cookie) == -EINVAL, "url '%s'", bad_urls[i]);
        EXPECT(entry == NULL && cookie == NULL, "outputs set for '%s'", bad_urls[i]);
        char *request_url = (char *)1;
        entry = cookie = (char *)1;
        EXPECT(httpdns_prepare_request_host(c, bad_urls[i], "a.example", 0, &request_url, &entry, &cookie, NULL) ==
                   -EINVAL,
               "url '%s' with host", bad_urls[i]);
        EXPECT(request_url == NULL && entry == NULL && cookie == NULL, "outputs set for '%s' with host", bad_urls[i]);
    }
    httpdns_close(c);
}

/* A deterministic generator, so a failing run can be repeated. */
static uint64_t state = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* A random string: printable, control, 8-bit (often not UTF-8) or very long. */
static char *random_string(void) {
    size_t length;
    switch (next_random() % 8) {
    case 0: length = 0; break;
    case 1: length = 2u << 20; break; /* above the daemon's default line limit */
    default: length = next_random() % 200; break;
    }
    char *text = malloc(length + 1);
    for (size_t i = 0; i < length; i++) {
        uint64_t r = next_random();
        text[i] = (char)((r % 4 == 0) ? (1 + r % 255) : (' ' + r % 95));
    }
    text[length] = 0;
    if (length > 8 && next_random() % 2) memcpy(text, "https://", 8);
    return text;
}

static void case_fuzz(void) {
    httpdns_client *c = httpdns_open(socket_path);
    for (int round = 0; round < 150; round++) {
        char *a = random_string(), *b = random_string();
        char *values[3] = {a, b, NULL};
        size_t counts[] = {0, 1, 2, 3, (size_t)-1, (size_t)next_random()};
        size_t count = counts[next_random() % 6];
        char **addrs = NULL;
        size_t n = 0;
        char *entry = NULL, *cookie = NULL;
        switch (round % 8) {
        case 0: httpdns_free(httpdns_call(c, a, b)); break;
        case 1:
            if (httpdns_resolve(c, a, &addrs, &n) == 0) httpdns_free_addrs(addrs, n);
            break;
        case 2: httpdns_free(httpdns_get_cookie_header(c, a, (round & 8) ? b : NULL)); break;
        case 3: {
            int rc = httpdns_handle_set_cookie(c, a, NULL, (const char *const *)values, count);
            EXPECT(rc <= 0, "handle_set_cookie returned %d", rc);
            break;
        }
        case 4: EXPECT(httpdns_delete_cookies(c, a) >= -40000, "delete_cookies out of range"); break;
        case 5:
            if (httpdns_prepare_request(c, a, &entry, &cookie) == 0) {
                httpdns_free(entry);
                httpdns_free(cookie);
            }
            break;
        case 7: {
            char *request_url = NULL;
            int stale = 0;
            if (httpdns_prepare_request_host(c, a, (round & 8) ? b : NULL, (unsigned)next_random() % 4, &request_url,
                                             &entry, &cookie, &stale) == 0) {
                EXPECT(request_url != NULL && (stale == 0 || stale == 1), "prepare_request_host outputs");
                httpdns_free(request_url);
                httpdns_free(entry);
                httpdns_free(cookie);
            }
            break;
        }
        case 6: {
            const char *message = NULL;
            httpdns_last_error(c, &message);
            EXPECT(message != NULL, "last_error gave no message");
            break;
        }
        }
        free(a);
        free(b);
    }
    httpdns_close(c);
}

int main(void) {
    socket_path = getenv("HTTPDNSD_SOCKET");
    run_case("open and close", case_open_and_close);
    run_case("closed and unknown handles", case_closed_and_unknown_handles);
    run_case("NULL strings", case_null_strings);
    run_case("strings that are not UTF-8", case_not_utf8);
    run_case("huge counts", case_huge_counts);
    run_case("bad params and URLs", case_params_and_urls);
    run_case("seeded fuzz loop", case_fuzz);
    printf("test_bad_args: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
