/* gai_bench NAME CALLS [THREADS]: getaddrinfo(NAME, AF_UNSPEC, SOCK_STREAM) CALLS times per thread
 * through whatever nsswitch.conf says, after a warm-up; prints the first answer, per-call latency
 * percentiles and the total rate as one line of key=value pairs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *name;
static int calls;
static double *samples;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int resolve_once(void) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &list);
    if (rc == 0) freeaddrinfo(list);
    return rc;
}

static void *run(void *argument) {
    double *mine = argument;
    for (int i = 0; i < calls; i++) {
        double start = now_us();
        if (resolve_once() != 0) {
            fprintf(stderr, "gai_bench: a lookup failed\n");
            exit(1);
        }
        mine[i] = now_us() - start;
    }
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gai_bench NAME CALLS [THREADS]\n");
        return 64;
    }
    name = argv[1];
    calls = atoi(argv[2]);
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &list);
    if (rc != 0) {
        fprintf(stderr, "gai_bench: %s: %s\n", name, gai_strerror(rc));
        return 1;
    }
    char first[INET6_ADDRSTRLEN] = "?";
    if (list->ai_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)list->ai_addr)->sin_addr, first, sizeof first);
    else
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)list->ai_addr)->sin6_addr, first, sizeof first);
    freeaddrinfo(list);
    for (int i = 0; i < calls / 10 + 1; i++) resolve_once(); /* warm-up: caches, page faults */

    samples = calloc((size_t)calls * (size_t)threads, sizeof *samples);
    pthread_t ids[64];
    if (threads > 64) threads = 64;
    double start = now_us();
    for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, run, samples + (size_t)t * (size_t)calls);
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    double elapsed = now_us() - start;
    size_t total = (size_t)calls * (size_t)threads;
    qsort(samples, total, sizeof *samples, by_value);
    printf("answer=%s threads=%d calls=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f per_second=%.0f\n", first, threads,
           total, samples[total / 2], samples[total * 9 / 10], samples[total * 99 / 100], (double)total / elapsed * 1e6);
    return 0;
}
