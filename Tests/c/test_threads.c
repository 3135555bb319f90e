/*
 * One libhttpdns.so handle shared by 8 threads: every call must get its own answer (calls on a
 * handle are serialized inside), and httpdns_last_error must report each thread's own last call
 * while the others keep succeeding or failing. Then a handle closed while 4 threads are calling
 * it: their calls finish or get -EINVAL, nothing crashes. HTTPDNSD_SOCKET names a running
 * daemon. Build and run with Tests/c/run.sh (-pthread).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpdns.h"

enum { THREADS = 8, ROUNDS = 150 };

static httpdns_client *shared;

struct worker {
    int index;
    int checks;
    int counted_going;
    char failure[256];
};

/* How many closing-test workers have finished a call (or given up): the handle is pulled away
 * only once all of them are calling. */
static pthread_mutex_t going_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t going_changed = PTHREAD_COND_INITIALIZER;
static int going;

static void count_going(struct worker *w) {
    if (w->counted_going) return;
    w->counted_going = 1;
    pthread_mutex_lock(&going_lock);
    going++;
    pthread_cond_broadcast(&going_changed);
    pthread_mutex_unlock(&going_lock);
}

#define CHECK(w, cond, ...)                                                       \
    do {                                                                          \
        (w)->checks++;                                                            \
        if (!(cond) && (w)->failure[0] == 0) {                                    \
            snprintf((w)->failure, sizeof (w)->failure, __VA_ARGS__);             \
        }                                                                         \
    } while (0)

static void *work(void *argument) {
    struct worker *w = argument;
    char url[96], cookie[64], expected[64];
    snprintf(url, sizeof url, "https://t%d.threads.example.com/", w->index);
    for (int round = 0; round < ROUNDS && w->failure[0] == 0; round++) {
        /* A value only this thread writes: another thread's answer would show. */
        snprintf(cookie, sizeof cookie, "t%d=%d; Path=/", w->index, round);
        snprintf(expected, sizeof expected, "t%d=%d", w->index, round);
        const char *values[] = {cookie};
        int rc = httpdns_handle_set_cookie(shared, url, NULL, values, 1);
        CHECK(w, rc == 0, "round %d: handle_set_cookie gave %d", round, rc);
        CHECK(w, httpdns_last_error(shared, NULL) == 0, "round %d: last_error after a success is not 0", round);

        char *header = httpdns_get_cookie_header(shared, url, NULL);
        CHECK(w, header != NULL && strcmp(header, expected) == 0, "round %d: header '%s', expected '%s'", round,
              header ? header : "(null)", expected);
        httpdns_free(header);

        /* A failure on this thread is this thread's last error, whatever the others do. */
        char **addrs = NULL;
        size_t n = 0;
        rc = httpdns_resolve(shared, "not a host..example", &addrs, &n);
        const char *message = NULL;
        int last = httpdns_last_error(shared, &message);
        CHECK(w, rc == HTTPDNS_E_INVALID_PARAMS && last == rc, "round %d: resolve gave %d, last_error %d", round,
              rc, last);
        CHECK(w, message != NULL && strlen(message) > 0, "round %d: no message for the failure", round);

        char *status = httpdns_call(shared, "status", NULL);
        CHECK(w, status != NULL && strstr(status, "\"version\"") != NULL, "round %d: status failed", round);
        httpdns_free(status);
    }
    long deleted = httpdns_delete_cookies(shared, url);
    CHECK(w, deleted == 1, "delete_cookies gave %ld", deleted);
    return NULL;
}

/* Calls status until the handle is gone; counts the calls that worked. */
static void *call_until_closed(void *argument) {
    struct worker *w = argument;
    for (;;) {
        char *status = httpdns_call(shared, "status", NULL);
        if (status == NULL) {
            int code = httpdns_last_error(shared, NULL);
            CHECK(w, code == -EINVAL, "a call on the closing handle failed with %d, not -EINVAL", code);
            count_going(w);
            return NULL;
        }
        httpdns_free(status);
        w->checks++;
        count_going(w);
    }
}

static int close_while_calling(void) {
    shared = httpdns_open(getenv("HTTPDNSD_SOCKET"));
    pthread_t threads[4];
    struct worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){.index = i};
        pthread_create(&threads[i], NULL, call_until_closed, &workers[i]);
    }
    /* Once every thread has a call behind it (and is making the next), pull the handle away. */
    pthread_mutex_lock(&going_lock);
    while (going < 4) pthread_cond_wait(&going_changed, &going_lock);
    pthread_mutex_unlock(&going_lock);
    httpdns_close(shared);
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        if (workers[i].failure[0] != 0) {
            failed = 1;
            fprintf(stderr, "FAIL closing thread %d: %s\n", i, workers[i].failure);
        }
    }
    return failed;
}

int main(void) {
    shared = httpdns_open(getenv("HTTPDNSD_SOCKET"));
    if (shared == NULL) {
        fprintf(stderr, "httpdns_open failed\n");
        return 2;
    }
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.index = i};
        if (pthread_create(&threads[i], NULL, work, &workers[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
    }
    int passed = 0, failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        if (workers[i].failure[0] != 0) {
            failed++;
            fprintf(stderr, "FAIL thread %d: %s\n", i, workers[i].failure);
        } else {
            passed++;
        }
    }
    httpdns_close(shared);
    if (close_while_calling() == 0) {
        passed++;
    } else {
        failed++;
    }
    printf("test_threads: %d threads x %d rounds, then a close under load: %d passed, %d failed\n", THREADS, ROUNDS,
           passed, failed);
    return failed == 0 ? 0 : 1;
}
