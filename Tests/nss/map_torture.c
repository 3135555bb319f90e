/* map_torture: the hosts map under a writer that publishes, flushes and recycles as fast as it can
 * while reader threads in several processes check every answer.
 *
 *   map_torture DIRECTORY SECONDS PROCESSES THREADS
 *
 * The writer is the daemon's (hosts_map_writer.c), the readers the module's (map_lookup.c, finding
 * the map next to $HTTPDNSD_SOCKET, which must name DIRECTORY/httpdnsd.sock, with the key of the
 * current file as the daemon's answers would hand it over). Each of NAMES names
 * has a version the writer raises on every publish; both of a record's addresses spell the name's
 * index and the version (fd00::I:V and fd00::I:V:1), so a torn record shows. A reader's answer is
 * valid when its version's publish had begun before the lookup ended, was not older than the
 * version whose publish had completed when it began, was not flushed before it began, and had not
 * expired when it began.
 * Prints one line of counts; exits 1 on any invalid answer. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hosts_map.h"
#include "map_lookup.h"

enum { NAMES = 48, SLOTS = 64 };

/* Shared by the writer and every reader process. */
struct board {
    uint64_t publishing[NAMES]; /* the latest version whose publish began */
    uint64_t published[NAMES];  /* the latest version whose publish completed */
    uint64_t flushed[NAMES];   /* the version published when the last flush completed */
    int stop;
    /* Each file's key for this uid, and which file is current. */
    unsigned char keys[8][HOSTS_MAP_KEY_BYTES];
    int generation;
    unsigned long hits, misses, invalid, recycles, flushes, publishes;
};

static struct board *board;
static int seconds;

static void name_of(int index, char *out) { sprintf(out, "n%02d.torture.test", index); }

static void address_of(int index, uint64_t version, int second, char *out) {
    sprintf(out, "fd00::%x:%x:%x:%x%s", index, (unsigned)(version >> 32 & 0xffff), (unsigned)(version >> 16 & 0xffff),
            (unsigned)(version & 0xffff), second ? ":1" : "");
}

static void *reader(void *unused) {
    (void)unused;
    unsigned seed = (unsigned)pthread_self();
    unsigned long hits = 0, misses = 0, invalid = 0;
    while (!__atomic_load_n(&board->stop, __ATOMIC_ACQUIRE)) {
        int index = (int)(rand_r(&seed) % NAMES);
        char name[64];
        name_of(index, name);
        map_remember_key((uint32_t)geteuid(), board->keys[__atomic_load_n(&board->generation, __ATOMIC_ACQUIRE)]);
        uint64_t flushed = __atomic_load_n(&board->flushed[index], __ATOMIC_ACQUIRE);
        uint64_t before = __atomic_load_n(&board->published[index], __ATOMIC_ACQUIRE);
        int64_t began = map_now_ns();
        struct hosts_map_answer answer;
        int hit = map_lookup(name, HOSTS_MAP_IPV6, (uint32_t)geteuid(), began, &answer);
        uint64_t after = __atomic_load_n(&board->publishing[index], __ATOMIC_ACQUIRE);
        if (!hit) {
            misses++;
            continue;
        }
        hits++;
        char text[2][INET6_ADDRSTRLEN], expected[2][64];
        uint64_t version = 0;
        int ok = answer.count == 2 && answer.expires_ns > began;
        if (ok) {
            inet_ntop(AF_INET6, answer.addresses[0], text[0], sizeof text[0]);
            inet_ntop(AF_INET6, answer.addresses[1], text[1], sizeof text[1]);
            unsigned char *a = answer.addresses[0];
            version = (uint64_t)(a[10] << 8 | a[11]) << 32 | (uint64_t)(a[12] << 8 | a[13]) << 16 | (a[14] << 8 | a[15]);
            address_of(index, version, 0, expected[0]);
            address_of(index, version, 1, expected[1]);
            struct in6_addr parsed[2];
            inet_pton(AF_INET6, expected[0], &parsed[0]);
            inet_pton(AF_INET6, expected[1], &parsed[1]);
            ok = memcmp(&parsed[0], answer.addresses[0], 16) == 0 && memcmp(&parsed[1], answer.addresses[1], 16) == 0 &&
                 version <= after && version >= before && version > flushed;
        }
        if (!ok) {
            if (invalid++ < 5)
                fprintf(stderr, "invalid: %s count=%u version=%llu before=%llu after=%llu flushed=%llu\n", name,
                        answer.count, (unsigned long long)version, (unsigned long long)before,
                        (unsigned long long)after, (unsigned long long)flushed);
        }
    }
    __atomic_fetch_add(&board->hits, hits, __ATOMIC_RELAXED);
    __atomic_fetch_add(&board->misses, misses, __ATOMIC_RELAXED);
    __atomic_fetch_add(&board->invalid, invalid, __ATOMIC_RELAXED);
    return NULL;
}

/* A new file, its key posted for the readers. */
static struct hosts_map_writer *create(const char *directory, int generation) {
    struct hosts_map_writer *writer = hosts_map_writer_create(directory, SLOTS);
    if (writer == NULL) {
        perror("hosts_map_writer_create");
        exit(2);
    }
    hosts_map_writer_user_key(writer, (uint32_t)geteuid(), board->keys[generation]);
    __atomic_store_n(&board->generation, generation, __ATOMIC_RELEASE);
    return writer;
}

static void run_writer(const char *directory) {
    struct hosts_map_writer *writer = create(directory, 0);
    uint64_t versions[NAMES] = {0};
    unsigned seed = 1;
    int64_t end = map_now_ns() + (int64_t)seconds * 1000000000;
    unsigned long round = 0;
    while (map_now_ns() < end) {
        round++;
        int index = (int)(rand_r(&seed) % NAMES);
        char name[64], addresses[2][64], joined[128];
        name_of(index, name);
        uint64_t version = ++versions[index];
        address_of(index, version, 0, addresses[0]);
        address_of(index, version, 1, addresses[1]);
        size_t first = strlen(addresses[0]) + 1;
        memcpy(joined, addresses[0], first);
        strcpy(joined + first, addresses[1]);
        /* 0.1 to 5 ms: many expire while readers look. */
        int64_t expires = map_now_ns() + 100000 + (int64_t)(rand_r(&seed) % 4900000);
        __atomic_store_n(&board->publishing[index], version, __ATOMIC_RELEASE);
        if (hosts_map_writer_publish(writer, name, HOSTS_MAP_IPV6, (uint32_t)geteuid(), joined, 2, expires) != 0) {
            fprintf(stderr, "publish failed\n");
            exit(2);
        }
        __atomic_store_n(&board->published[index], version, __ATOMIC_RELEASE);
        board->publishes++;
        if (round % 2000 == 0) {
            hosts_map_writer_flush(writer);
            for (int i = 0; i < NAMES; i++) __atomic_store_n(&board->flushed[i], versions[i], __ATOMIC_RELEASE);
            board->flushes++;
        }
        /* Fewer recycles than a process keeps mappings: the readers follow every one. */
        if (round % 20000 == 0 && board->recycles < 6) {
            board->recycles++;
            struct hosts_map_writer *next = create(directory, (int)board->recycles);
            hosts_map_writer_close(writer);
            writer = next;
        }
    }
    hosts_map_writer_close(writer);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: map_torture DIRECTORY SECONDS PROCESSES THREADS\n");
        return 64;
    }
    seconds = atoi(argv[2]);
    int processes = atoi(argv[3]), threads = atoi(argv[4]);
    board = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (board == MAP_FAILED) return 2;
    memset(board, 0, sizeof *board);
    /* Where the module looks: map/ next to the socket. */
    char directory[4096];
    snprintf(directory, sizeof directory, "%s/" HOSTS_MAP_DIRECTORY_NAME, argv[1]);
    mkdir(directory, 0755);
    pid_t children[64];
    for (int p = 0; p < processes && p < 64; p++) {
        children[p] = fork();
        if (children[p] == 0) {
            pthread_t ids[64];
            for (int t = 0; t < threads && t < 64; t++) pthread_create(&ids[t], NULL, reader, NULL);
            for (int t = 0; t < threads && t < 64; t++) pthread_join(ids[t], NULL);
            _exit(0);
        }
    }
    run_writer(directory);
    __atomic_store_n(&board->stop, 1, __ATOMIC_RELEASE);
    int failed = 0;
    for (int p = 0; p < processes && p < 64; p++) {
        int status;
        waitpid(children[p], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
    printf("hits=%lu misses=%lu invalid=%lu publishes=%lu flushes=%lu recycles=%lu\n", board->hits, board->misses,
           board->invalid, board->publishes, board->flushes, board->recycles);
    return failed || board->invalid != 0 ? 1 : 0;
}
