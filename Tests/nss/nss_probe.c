/* nss_probe: calls libnss_httpdns.so.2's entry points directly (dlopen + dlsym), as glibc would.
 *
 *   nss_probe MODULE LOOKUP SUBJECT [BUFLEN]       one lookup, printed as key=value pairs
 *   nss_probe MODULE check-buffers LOOKUP SUBJECT   every buffer size, aligned and not
 *   nss_probe MODULE check-threads LOOKUP SUBJECT THREADS ROUNDS
 *   nss_probe MODULE check-fork LOOKUP SUBJECT
 *   nss_probe MODULE check-preallocated NAME        gethostbyname4_r with *pat handed in
 *   nss_probe MODULE sequence STEP...               steps in one process: LOOKUP:SUBJECT (one line
 *                                                   each, as a single lookup prints), wait:PATH
 *                                                   (until PATH exists, at most 60 s), sleep:MS
 *
 * LOOKUP is name4, name3-inet, name3-inet6, name3-unspec, name3-af99 (an unsupported family),
 * name2-inet, name2-inet6, name, addr2, addr, addr2-len3 (a wrong length) or addr2-af99.
 * SUBJECT is a host name, or an address for the addr lookups. The checks exit 0 when all passed
 * and print one line per failure otherwise. The socket is the module's own choice
 * (HTTPDNSD_SOCKET, else /run/httpdnsd/httpdnsd.sock). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum nss_status name4_fn(const char *, struct gaih_addrtuple **, char *, size_t, int *, int *, int32_t *);
typedef enum nss_status name3_fn(const char *, int, struct hostent *, char *, size_t, int *, int *, int32_t *,
                                 char **);
typedef enum nss_status name2_fn(const char *, int, struct hostent *, char *, size_t, int *, int *);
typedef enum nss_status name_fn(const char *, struct hostent *, char *, size_t, int *, int *);
typedef enum nss_status addr2_fn(const void *, socklen_t, int, struct hostent *, char *, size_t, int *, int *,
                                 int32_t *);
typedef enum nss_status addr_fn(const void *, socklen_t, int, struct hostent *, char *, size_t, int *, int *);

static struct {
    name4_fn *name4;
    name3_fn *name3;
    name2_fn *name2;
    name_fn *name;
    addr2_fn *addr2;
    addr_fn *addr;
} module;

/* Marks for what the module must not touch. */
enum { UNTOUCHED = -7, GUARD = 64, GUARD_BYTE = 0xA5, RENDER_CAPACITY = 16384, BIG_BUFFER = 65536 };

static int failures;

__attribute__((format(printf, 1, 2))) static void fail(const char *format, ...) {
    failures++;
    va_list arguments;
    va_start(arguments, format);
    printf("FAIL ");
    vprintf(format, arguments);
    printf("\n");
    va_end(arguments);
}

/* --- one lookup ---------------------------------------------------------------------------- */

struct outcome {
    enum nss_status status;
    int err;
    int herr;
    int32_t ttl;
    char *canon;
    struct hostent host;
    struct gaih_addrtuple *tuples;
};

struct lookup {
    const char *kind;
    const char *subject;
};

static const char *status_name(enum nss_status status) {
    switch (status) {
    case NSS_STATUS_TRYAGAIN: return "TRYAGAIN";
    case NSS_STATUS_UNAVAIL: return "UNAVAIL";
    case NSS_STATUS_NOTFOUND: return "NOTFOUND";
    case NSS_STATUS_SUCCESS: return "SUCCESS";
    case NSS_STATUS_RETURN: return "RETURN";
    }
    return "?";
}

static const char *herrno_name(int herr) {
    switch (herr) {
    case UNTOUCHED: return "untouched";
    case NETDB_INTERNAL: return "NETDB_INTERNAL";
    case NETDB_SUCCESS: return "NETDB_SUCCESS";
    case HOST_NOT_FOUND: return "HOST_NOT_FOUND";
    case TRY_AGAIN: return "TRY_AGAIN";
    case NO_RECOVERY: return "NO_RECOVERY";
    case NO_DATA: return "NO_DATA";
    }
    return "?";
}

static const char *errno_name(int err) {
    if (err == UNTOUCHED) return "untouched";
    if (err == 0) return "0";
    const char *name = strerrorname_np(err);
    return name != NULL ? name : "?";
}

/* An address argument: family and bytes from its text. */
static int parse_address(const char *text, int *af, unsigned char bytes[16]) {
    if (inet_pton(AF_INET, text, bytes) == 1) {
        *af = AF_INET;
        return 4;
    }
    if (inet_pton(AF_INET6, text, bytes) == 1) {
        *af = AF_INET6;
        return 16;
    }
    fprintf(stderr, "nss_probe: %s is no address\n", text);
    exit(64);
}

static int family_of(const char *kind) {
    if (strstr(kind, "inet6") != NULL) return AF_INET6;
    if (strstr(kind, "inet") != NULL) return AF_INET;
    if (strstr(kind, "unspec") != NULL) return AF_UNSPEC;
    return 99;
}

static void run(const struct lookup *lookup, char *buffer, size_t buflen, struct outcome *out) {
    memset(out, 0, sizeof *out);
    out->err = UNTOUCHED;
    out->herr = UNTOUCHED;
    out->ttl = UNTOUCHED;
    const char *kind = lookup->kind;
    if (strcmp(kind, "name4") == 0) {
        out->status = module.name4(lookup->subject, &out->tuples, buffer, buflen, &out->err, &out->herr, &out->ttl);
    } else if (strncmp(kind, "name3-", 6) == 0) {
        out->status = module.name3(lookup->subject, family_of(kind), &out->host, buffer, buflen, &out->err,
                                   &out->herr, &out->ttl, &out->canon);
    } else if (strncmp(kind, "name2-", 6) == 0) {
        out->status = module.name2(lookup->subject, family_of(kind), &out->host, buffer, buflen, &out->err, &out->herr);
    } else if (strcmp(kind, "name") == 0) {
        out->status = module.name(lookup->subject, &out->host, buffer, buflen, &out->err, &out->herr);
    } else if (strncmp(kind, "addr", 4) == 0) {
        unsigned char bytes[16];
        int af;
        socklen_t len = (socklen_t)parse_address(lookup->subject, &af, bytes);
        if (strcmp(kind, "addr2-len3") == 0) len = 3;
        if (strcmp(kind, "addr2-af99") == 0) af = 99;
        if (strcmp(kind, "addr") == 0) {
            out->status = module.addr(bytes, len, af, &out->host, buffer, buflen, &out->err, &out->herr);
        } else {
            out->status = module.addr2(bytes, len, af, &out->host, buffer, buflen, &out->err, &out->herr, &out->ttl);
        }
    } else {
        fprintf(stderr, "nss_probe: unknown lookup %s\n", kind);
        exit(64);
    }
}

struct text {
    char data[RENDER_CAPACITY];
    size_t length;
};

static void put(struct text *text, const char *piece) {
    size_t n = strlen(piece);
    if (n >= sizeof text->data - text->length) n = sizeof text->data - text->length - 1;
    memcpy(text->data + text->length, piece, n);
    text->length += n;
    text->data[text->length] = '\0';
}

static void put_address(struct text *text, int af, const void *bytes) {
    char literal[INET6_ADDRSTRLEN];
    put(text, inet_ntop(af, bytes, literal, sizeof literal) != NULL ? literal : "?");
}

/* What came back, without the TTL (which counts down between calls). */
static void render(const struct lookup *lookup, const struct outcome *out, struct text *text) {
    text->length = 0;
    text->data[0] = '\0';
    put(text, "status=");
    put(text, status_name(out->status));
    put(text, " errno=");
    put(text, errno_name(out->err));
    put(text, " h_errno=");
    put(text, herrno_name(out->herr));
    if (out->status != NSS_STATUS_SUCCESS) return;
    if (strcmp(lookup->kind, "name4") == 0) {
        put(text, " name=");
        put(text, out->tuples->name != NULL ? out->tuples->name : "(null)");
        put(text, " addresses=");
        for (const struct gaih_addrtuple *t = out->tuples; t != NULL; t = t->next) {
            if (t != out->tuples) put(text, ",");
            put_address(text, t->family, t->addr);
            if (t->name == NULL || strcmp(t->name, out->tuples->name) != 0) put(text, "(other name)");
            if (t->scopeid != 0) put(text, "(scope)");
        }
        return;
    }
    put(text, " name=");
    put(text, out->host.h_name);
    put(text, " aliases=");
    for (char **alias = out->host.h_aliases; *alias != NULL; alias++) {
        if (alias != out->host.h_aliases) put(text, ",");
        put(text, *alias);
    }
    put(text, " family=");
    put(text, out->host.h_addrtype == AF_INET ? "inet" : out->host.h_addrtype == AF_INET6 ? "inet6" : "?");
    char length[16];
    snprintf(length, sizeof length, "%d", out->host.h_length);
    put(text, " length=");
    put(text, length);
    put(text, " addresses=");
    for (char **address = out->host.h_addr_list; *address != NULL; address++) {
        if (address != out->host.h_addr_list) put(text, ",");
        put_address(text, out->host.h_addrtype, *address);
    }
    if (out->canon != NULL) {
        put(text, " canon=");
        put(text, out->canon);
    }
}

/* --- checks -------------------------------------------------------------------------------- */

static bool inside(const void *p, size_t size, const char *buffer, size_t buflen) {
    const char *c = p;
    return c >= buffer && c <= buffer + buflen && size <= (size_t)(buffer + buflen - c);
}

static bool string_inside(const char *s, const char *buffer, size_t buflen) {
    if (!inside(s, 1, buffer, buflen)) return false;
    const char *end = memchr(s, '\0', (size_t)(buffer + buflen - s));
    return end != NULL;
}

static bool aligned(const void *p, size_t alignment) { return (uintptr_t)p % alignment == 0; }

/* Every pointer of a successful answer lies in the buffer, aligned for its type. */
static void check_layout(const struct lookup *lookup, const struct outcome *out, const char *buffer, size_t buflen,
                         const struct gaih_addrtuple *handed_in) {
    if (strcmp(lookup->kind, "name4") == 0) {
        for (const struct gaih_addrtuple *t = out->tuples; t != NULL; t = t->next) {
            if (t != handed_in && (!inside(t, sizeof *t, buffer, buflen) || !aligned(t, alignof(struct gaih_addrtuple))))
                fail("%s: a tuple outside the buffer or unaligned (buflen %zu)", lookup->kind, buflen);
            if (t->name != NULL && !string_inside(t->name, buffer, buflen))
                fail("%s: a tuple's name outside the buffer (buflen %zu)", lookup->kind, buflen);
        }
        return;
    }
    const struct hostent *h = &out->host;
    if (!string_inside(h->h_name, buffer, buflen)) fail("%s: h_name outside the buffer (buflen %zu)", lookup->kind, buflen);
    if (!aligned(h->h_aliases, alignof(char *)) || !inside(h->h_aliases, sizeof(char *), buffer, buflen))
        fail("%s: h_aliases outside the buffer or unaligned (buflen %zu)", lookup->kind, buflen);
    for (char **alias = h->h_aliases; *alias != NULL; alias++) {
        if (!inside(alias + 1, sizeof(char *), buffer, buflen) || !string_inside(*alias, buffer, buflen))
            fail("%s: an alias outside the buffer (buflen %zu)", lookup->kind, buflen);
    }
    if (!aligned(h->h_addr_list, alignof(char *)) || !inside(h->h_addr_list, sizeof(char *), buffer, buflen))
        fail("%s: h_addr_list outside the buffer or unaligned (buflen %zu)", lookup->kind, buflen);
    for (char **address = h->h_addr_list; *address != NULL; address++) {
        if (!inside(address + 1, sizeof(char *), buffer, buflen) ||
            !inside(*address, (size_t)h->h_length, buffer, buflen) || !aligned(*address, alignof(struct in_addr)))
            fail("%s: an address outside the buffer or unaligned (buflen %zu)", lookup->kind, buflen);
    }
}

static void reference(const struct lookup *lookup, struct text *expected) {
    static char buffer[BIG_BUFFER];
    struct outcome out;
    run(lookup, buffer, sizeof buffer, &out);
    render(lookup, &out, expected);
    if (out.status != NSS_STATUS_SUCCESS) {
        fprintf(stderr, "nss_probe: %s %s does not succeed with a large buffer: %s\n", lookup->kind, lookup->subject,
                expected->data);
        exit(1);
    }
}

/* From an empty buffer up: ERANGE (TRYAGAIN, NETDB_INTERNAL) until the answer fits, then the same
   answer at every larger size; nothing written outside the buffer; errno as it was. */
static void check_buffers(const struct lookup *lookup) {
    struct text expected, got;
    reference(lookup, &expected);
    static const size_t offsets[] = {0, 1, 3, 7};
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
        size_t offset = offsets[o];
        size_t first_fit = 0;
        bool fitted = false;
        for (size_t size = 0; size < BIG_BUFFER && !(fitted && size > first_fit + 160); size++) {
            /* A fresh allocation each time, 16-byte aligned, so the offset makes the misalignment. */
            unsigned char *area = aligned_alloc(16, (GUARD + offset + size + GUARD + 15) / 16 * 16);
            memset(area, GUARD_BYTE, GUARD + offset + size + GUARD);
            char *buffer = (char *)area + GUARD + offset;
            struct outcome out;
            errno = EDOM;
            run(lookup, buffer, size, &out);
            if (errno != EDOM) fail("%s: errno changed (buflen %zu)", lookup->kind, size);
            for (size_t i = 0; i < GUARD + offset; i++) {
                if (area[i] != GUARD_BYTE) {
                    fail("%s: wrote before the buffer (buflen %zu)", lookup->kind, size);
                    break;
                }
            }
            for (size_t i = 0; i < GUARD; i++) {
                if (area[GUARD + offset + size + i] != GUARD_BYTE) {
                    fail("%s: wrote past the buffer (buflen %zu)", lookup->kind, size);
                    break;
                }
            }
            if (out.status == NSS_STATUS_TRYAGAIN) {
                if (out.err != ERANGE || out.herr != NETDB_INTERNAL)
                    fail("%s: TRYAGAIN without ERANGE/NETDB_INTERNAL (buflen %zu)", lookup->kind, size);
                if (fitted) fail("%s: too small again after it fitted (buflen %zu)", lookup->kind, size);
            } else if (out.status == NSS_STATUS_SUCCESS) {
                check_layout(lookup, &out, buffer, size, NULL);
                render(lookup, &out, &got);
                if (strcmp(got.data, expected.data) != 0) {
                    fail("%s: another answer (buflen %zu)", lookup->kind, size);
                    printf("     expected %s\n     got      %s\n", expected.data, got.data);
                }
                if (out.herr != NETDB_SUCCESS) fail("%s: success without NETDB_SUCCESS (buflen %zu)", lookup->kind, size);
                if (!fitted) {
                    fitted = true;
                    first_fit = size;
                }
            } else {
                render(lookup, &out, &got);
                fail("%s: neither ERANGE nor success (buflen %zu)", lookup->kind, size);
                printf("     %s\n", got.data);
            }
            free(area);
        }
        if (!fitted) fail("%s: never fitted (offset %zu)", lookup->kind, offset);
        printf("%s offset %zu: ERANGE below %zu bytes, then the same answer\n", lookup->kind, offset, first_fit);
    }
}

struct thread_job {
    const struct lookup *lookup;
    const char *expected;
    int rounds;
    int mismatches;
};

static void *thread_main(void *argument) {
    struct thread_job *job = argument;
    char *buffer = malloc(BIG_BUFFER);
    struct text got;
    for (int i = 0; i < job->rounds; i++) {
        struct outcome out;
        run(job->lookup, buffer, BIG_BUFFER, &out);
        render(job->lookup, &out, &got);
        if (strcmp(got.data, job->expected) != 0) job->mismatches++;
    }
    free(buffer);
    return NULL;
}

/* The same answer on every thread at once. */
static void check_threads(const struct lookup *lookup, int threads, int rounds) {
    struct text expected;
    reference(lookup, &expected);
    pthread_t ids[256];
    struct thread_job jobs[256];
    if (threads > 256) threads = 256;
    for (int i = 0; i < threads; i++) {
        jobs[i] = (struct thread_job){lookup, expected.data, rounds, 0};
        pthread_create(&ids[i], NULL, thread_main, &jobs[i]);
    }
    int mismatches = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        mismatches += jobs[i].mismatches;
    }
    if (mismatches != 0) fail("%s: %d lookups answered differently on threads", lookup->kind, mismatches);
    printf("%s: %d threads x %d lookups\n", lookup->kind, threads, rounds);
}

/* Lookups before and after fork(), in the parent and the child. */
static void check_fork(const struct lookup *lookup) {
    struct text expected, got;
    reference(lookup, &expected);
    pid_t child = fork();
    if (child == 0) {
        static char buffer[BIG_BUFFER];
        struct outcome out;
        run(lookup, buffer, sizeof buffer, &out);
        render(lookup, &out, &got);
        _exit(strcmp(got.data, expected.data) == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: another answer in the child (status %d)", lookup->kind, status);
    reference(lookup, &got);
    if (strcmp(got.data, expected.data) != 0) fail("%s: another answer after fork", lookup->kind);
    printf("%s: same answer before fork, in the child and after\n", lookup->kind);
}

/* An older getaddrinfo handed in the first tuple: it is filled in, the rest are in the buffer. */
static void check_preallocated(const char *name) {
    struct lookup lookup = {"name4", name};
    struct text expected, got;
    reference(&lookup, &expected);
    static char buffer[BIG_BUFFER];
    struct gaih_addrtuple first;
    memset(&first, 0, sizeof first);
    struct outcome out;
    memset(&out, 0, sizeof out);
    out.err = UNTOUCHED;
    out.herr = UNTOUCHED;
    out.tuples = &first;
    out.status = module.name4(name, &out.tuples, buffer, sizeof buffer, &out.err, &out.herr, &out.ttl);
    if (out.tuples != &first) fail("%s: *pat was replaced", name);
    check_layout(&lookup, &out, buffer, sizeof buffer, &first);
    render(&lookup, &out, &got);
    if (strcmp(got.data, expected.data) != 0) {
        fail("%s: another answer with *pat handed in", name);
        printf("     expected %s\n     got      %s\n", expected.data, got.data);
    }
    printf("name4 with *pat handed in: %s\n", got.data);
}

/* One lookup with the big buffer, printed as one line. */
static void print_lookup(const struct lookup *lookup, size_t buflen) {
    char *buffer = malloc(buflen > 0 ? buflen : 1);
    struct outcome out;
    struct text text;
    run(lookup, buffer, buflen, &out);
    render(lookup, &out, &text);
    if (out.status == NSS_STATUS_SUCCESS && out.ttl != UNTOUCHED) {
        printf("%s ttl=%ld\n", text.data, (long)out.ttl);
    } else {
        printf("%s\n", text.data);
    }
    fflush(stdout);
    free(buffer);
}

static int run_sequence(int count, char **steps) {
    for (int i = 0; i < count; i++) {
        char *colon = strchr(steps[i], ':');
        if (colon == NULL) return 64;
        *colon = '\0';
        const char *argument = colon + 1;
        if (strcmp(steps[i], "sleep") == 0) {
            usleep((useconds_t)atoi(argument) * 1000);
        } else if (strcmp(steps[i], "wait") == 0) {
            for (int waited = 0; access(argument, F_OK) != 0 && waited < 60000; waited += 10) usleep(10000);
        } else {
            struct lookup lookup = {steps[i], argument};
            print_lookup(&lookup, BIG_BUFFER);
        }
    }
    return 0;
}

static void *symbol(void *handle, const char *name) {
    void *p = dlsym(handle, name);
    if (p == NULL) {
        fprintf(stderr, "nss_probe: %s: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: nss_probe MODULE LOOKUP SUBJECT [BUFLEN] | MODULE check-... (see the source)\n");
        return 64;
    }
    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "nss_probe: %s\n", dlerror());
        return 1;
    }
    module.name4 = (name4_fn *)symbol(handle, "_nss_httpdns_gethostbyname4_r");
    module.name3 = (name3_fn *)symbol(handle, "_nss_httpdns_gethostbyname3_r");
    module.name2 = (name2_fn *)symbol(handle, "_nss_httpdns_gethostbyname2_r");
    module.name = (name_fn *)symbol(handle, "_nss_httpdns_gethostbyname_r");
    module.addr2 = (addr2_fn *)symbol(handle, "_nss_httpdns_gethostbyaddr2_r");
    module.addr = (addr_fn *)symbol(handle, "_nss_httpdns_gethostbyaddr_r");

    const char *command = argv[2];
    if (strcmp(command, "check-buffers") == 0 && argc == 5) {
        struct lookup lookup = {argv[3], argv[4]};
        check_buffers(&lookup);
    } else if (strcmp(command, "check-threads") == 0 && argc == 7) {
        struct lookup lookup = {argv[3], argv[4]};
        check_threads(&lookup, atoi(argv[5]), atoi(argv[6]));
    } else if (strcmp(command, "check-fork") == 0 && argc == 5) {
        struct lookup lookup = {argv[3], argv[4]};
        check_fork(&lookup);
    } else if (strcmp(command, "check-preallocated") == 0 && argc == 4) {
        check_preallocated(argv[3]);
    } else if (strcmp(command, "sequence") == 0) {
        return run_sequence(argc - 3, argv + 3);
    } else if (strncmp(command, "check-", 6) != 0 && argc <= 5) {
        struct lookup lookup = {command, argv[3]};
        print_lookup(&lookup, argc == 5 ? (size_t)strtoul(argv[4], NULL, 10) : BIG_BUFFER);
        return 0;
    } else {
        fprintf(stderr, "nss_probe: bad arguments (see the source)\n");
        return 64;
    }
    if (failures == 0) printf("all checks passed\n");
    return failures == 0 ? 0 : 1;
}
