/*
 * The C tests' checks: CHECK(cond, printf-format, ...) counts a pass, or counts a failure and
 * says where and why; check_report prints the counts and gives the exit status.
 */
#ifndef HTTPDNS_TEST_CHECK_H
#define HTTPDNS_TEST_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) {                                                         \
            passed++;                                                       \
        } else {                                                            \
            failed++;                                                       \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

static inline int check_report(const char *test) {
    printf("%s: %d passed, %d failed\n", test, passed, failed);
    return failed == 0 ? 0 : 1;
}

#endif
