/* The process's mappings of the daemon's hosts map (httpdnsd(8), SHARED HOSTS MAP).
 *
 * The map is the file map/hosts.map in the socket's directory. It is trusted as the socket is:
 * both directories must be writable by their owners only, and the file a regular file (not a
 * link) owned by root or by its directory's owner, writable by its owner only, of the size its
 * header says, written in this process's time namespace. Anything else and the socket answers
 * every lookup.
 *
 * A lookup reads one pointer and then only the mapping: no lock, no allocation. A map the daemon
 * replaced is marked retired, and the next lookup maps the file now in its place. A replaced
 * mapping is never unmapped, since another thread may still be reading it; after
 * MAX_MAPPINGS of them the process stops mapping and uses the socket. After fork(2) the child
 * keeps the parent's mappings, which stay valid. */
#include "map_lookup.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon_call.h"

/* Maps a process keeps: restarts and resizes it has seen, each a mapping of at most
   HOSTS_MAP_MAX_SLOTS slots. */
enum { MAX_MAPPINGS = 8 };

static struct hosts_map_view views[MAX_MAPPINGS];
static int view_count;
/* The view lookups use (NULL: none yet); set with release once the view is filled. */
static struct hosts_map_view *current;
/* One thread maps at a time; the others use the socket meanwhile. */
static int opening;

/* The latest key the daemon handed out, written between two increments of sequence by one
   thread at a time (updating); readers copy it and keep the copy when sequence was even and
   unchanged. */
static struct {
    uint32_t sequence;
    uint32_t uid;
    int updating;
    unsigned char key[HOSTS_MAP_KEY_BYTES];
} user_key;

void map_remember_key(uint32_t uid, const unsigned char key[HOSTS_MAP_KEY_BYTES]) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&user_key.updating, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    if (__atomic_load_n(&user_key.uid, __ATOMIC_RELAXED) != uid || memcmp(user_key.key, key, HOSTS_MAP_KEY_BYTES) != 0 ||
        __atomic_load_n(&user_key.sequence, __ATOMIC_RELAXED) == 0) {
        uint32_t sequence = __atomic_load_n(&user_key.sequence, __ATOMIC_RELAXED);
        __atomic_store_n(&user_key.sequence, sequence + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        __atomic_store_n(&user_key.uid, uid, __ATOMIC_RELAXED);
        for (int i = 0; i < HOSTS_MAP_KEY_BYTES; i++) __atomic_store_n(&user_key.key[i], key[i], __ATOMIC_RELAXED);
        __atomic_store_n(&user_key.sequence, sequence + 2, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&user_key.updating, 0, __ATOMIC_RELEASE);
}

/* The key for uid into key; false when none is kept for it (or it is being replaced). */
static bool key_for(uint32_t uid, unsigned char key[HOSTS_MAP_KEY_BYTES]) {
    uint32_t before = __atomic_load_n(&user_key.sequence, __ATOMIC_ACQUIRE);
    if (before == 0 || (before & 1)) return false;
    uint32_t owner = __atomic_load_n(&user_key.uid, __ATOMIC_RELAXED);
    for (int i = 0; i < HOSTS_MAP_KEY_BYTES; i++) key[i] = __atomic_load_n(&user_key.key[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&user_key.sequence, __ATOMIC_RELAXED) == before && owner == uid;
}

int64_t map_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* The largest file a valid map can be. */
static const size_t max_map_size =
    sizeof(struct hosts_map_header) + (size_t)HOSTS_MAP_MAX_SLOTS * sizeof(struct hosts_map_slot);

/* Opens and checks the map next to the socket into *view; 0 or -1. */
static int map_file(struct hosts_map_view *view) {
    const char *socket = daemon_socket_path();
    const char *slash = strrchr(socket, '/');
    char directory[256];
    size_t length = slash == NULL ? 0 : (size_t)(slash - socket);
    if (slash == NULL || length >= sizeof directory) return -1;
    memcpy(directory, socket, length);
    directory[length] = '\0';
    if (length == 0) strcpy(directory, "/");

    int socket_directory_fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (socket_directory_fd < 0) return -1;
    struct stat dir_status, status;
    int directory_fd = -1, fd = -1;
    bool trusted = fstat(socket_directory_fd, &dir_status) == 0 && (dir_status.st_mode & 022) == 0;
    if (trusted)
        directory_fd = openat(socket_directory_fd, HOSTS_MAP_DIRECTORY_NAME,
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(socket_directory_fd);
    if (directory_fd < 0) return -1;
    trusted = fstat(directory_fd, &dir_status) == 0 && (dir_status.st_mode & 022) == 0;
    if (trusted) fd = openat(directory_fd, HOSTS_MAP_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    close(directory_fd);
    if (fd < 0) return -1;
    trusted = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && (status.st_mode & 022) == 0 &&
              (status.st_uid == 0 || status.st_uid == dir_status.st_uid) &&
              (size_t)status.st_size >= sizeof(struct hosts_map_header) && (size_t)status.st_size <= max_map_size;
    void *base = trusted ? mmap(NULL, (size_t)status.st_size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (base == MAP_FAILED) return -1;
    uint64_t device, inode;
    if (hosts_map_time_namespace(&device, &inode) != 0 ||
        hosts_map_view_init(view, base, (size_t)status.st_size, device, inode) != 0) {
        munmap(base, (size_t)status.st_size);
        return -1;
    }
    return 0;
}

/* Maps the file when no usable view is there and another may be. */
static void map_again(void) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&opening, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    struct hosts_map_view *view = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if ((view == NULL || hosts_map_view_retired(view)) && view_count < MAX_MAPPINGS &&
        map_file(&views[view_count]) == 0) {
        __atomic_store_n(&current, &views[view_count], __ATOMIC_RELEASE);
        view_count++;
    }
    __atomic_store_n(&opening, 0, __ATOMIC_RELEASE);
}

int map_lookup(const char *name, int family, uint32_t uid, int64_t now_ns, struct hosts_map_answer *answer) {
    size_t length = strlen(name);
    struct hosts_map_view *view = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if (view == NULL || hosts_map_view_retired(view)) {
        map_again();
        view = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
        if (view == NULL) return 0;
    }
    /* The daemon keys answers by the uid that asked over the socket (SO_PEERCRED's effective
       uid, which the caller passes): a uid's first lookup of an answer reaches the daemon, its
       address memory and monitor. */
    unsigned char key[HOSTS_MAP_KEY_BYTES];
    if (!key_for(uid, key)) return 0;
    return hosts_map_find(view, key, name, length, family, now_ns, answer);
}
