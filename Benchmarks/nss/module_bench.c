/* module_bench MODULE NAME CALLS: the module's _nss_httpdns_gethostbyname4_r called directly (as
 * nss_probe does, without glibc's getaddrinfo around it) CALLS times after a warm-up; prints the
 * per-call latency percentiles as one line of key=value pairs. A name in canonical form is
 * answered from the hosts map once the warm-up brought the key; another spelling of it (capitals)
 * always asks the socket. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef enum nss_status name4_fn(const char *, struct gaih_addrtuple **, char *, size_t, int *, int *, int32_t *);

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: module_bench MODULE NAME CALLS\n");
        return 64;
    }
    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    name4_fn *name4 = handle == NULL ? NULL : (name4_fn *)dlsym(handle, "_nss_httpdns_gethostbyname4_r");
    if (name4 == NULL) {
        fprintf(stderr, "module_bench: %s\n", dlerror());
        return 1;
    }
    int calls = atoi(argv[3]);
    static char buffer[65536];
    double *samples = calloc((size_t)calls, sizeof *samples);
    for (int i = -(calls / 10 + 1); i < calls; i++) {
        struct gaih_addrtuple *tuples = NULL;
        int error = 0, h_error = 0;
        int32_t ttl = 0;
        double start = now_us();
        enum nss_status status = name4(argv[2], &tuples, buffer, sizeof buffer, &error, &h_error, &ttl);
        double took = now_us() - start;
        if (status != NSS_STATUS_SUCCESS) {
            fprintf(stderr, "module_bench: %s: status %d\n", argv[2], status);
            return 1;
        }
        if (i >= 0) samples[i] = took;
    }
    qsort(samples, (size_t)calls, sizeof *samples, by_value);
    printf("calls=%d p50_us=%.2f p90_us=%.2f p99_us=%.2f\n", calls, samples[calls / 2], samples[calls * 9 / 10],
           samples[calls * 99 / 100]);
    return 0;
}
