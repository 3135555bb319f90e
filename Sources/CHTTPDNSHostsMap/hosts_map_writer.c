/* The hosts map's one writer, on the daemon's loop thread: creates the file, publishes records
 * between two increments of their sequence counter, flushes by epoch. It remembers each slot's
 * key and expiry itself (the file holds them sealed) to choose where a record goes. */
#include "hosts_map.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What the writer knows of a slot. */
struct slot_memory {
    unsigned char tag[16];
    int64_t expires_ns;
    uint32_t epoch;
    int used;
};

struct hosts_map_writer {
    unsigned char *base;
    size_t size;
    struct hosts_map_header *header;
    struct hosts_map_slot *slots;
    struct slot_memory *memory;
    uint32_t slot_count;
    uint64_t next_nonce;
    /* Fills the unused blocks of a record with what looks like the rest. */
    unsigned char filler_key[16];
    /* What each uid's key is derived from: in the daemon's memory only. */
    unsigned char secret[16];
    /* The file's identity, so that withdrawing removes this file and never another. */
    dev_t device;
    ino_t inode;
};

static int fill_random(void *out, size_t length) {
    unsigned char *p = out;
    while (length > 0) {
        ssize_t n = getrandom(p, length, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}

/* Marks the open file (when a regular file of this user's) retired, so its readers map the new one. */
static void retire(int fd) {
    struct stat status;
    if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_uid == geteuid() &&
        (size_t)status.st_size >= sizeof(struct hosts_map_header)) {
        void *old = mmap(NULL, sizeof(struct hosts_map_header), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (old != MAP_FAILED) {
            struct hosts_map_header *header = old;
            if (header->magic == HOSTS_MAP_MAGIC) __atomic_store_n(&header->retired, 1, __ATOMIC_RELEASE);
            munmap(old, sizeof(struct hosts_map_header));
        }
    }
}

struct hosts_map_writer *hosts_map_writer_create(const char *directory, uint32_t slot_count) {
    if (slot_count < HOSTS_MAP_MIN_SLOTS || slot_count > HOSTS_MAP_MAX_SLOTS || (slot_count & (slot_count - 1))) {
        errno = EINVAL;
        return NULL;
    }
    struct hosts_map_header header = {
        .magic = HOSTS_MAP_MAGIC,
        .version = HOSTS_MAP_VERSION,
        .header_size = sizeof header,
        .slot_count = slot_count,
        .slot_size = sizeof(struct hosts_map_slot),
        .clock_id = (uint32_t)CLOCK_MONOTONIC,
    };
    header.file_size = sizeof header + (uint64_t)slot_count * sizeof(struct hosts_map_slot);
    if (hosts_map_time_namespace(&header.time_namespace_device, &header.time_namespace_inode) != 0) return NULL;

    int directory_fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory_fd < 0) return NULL;
    uint64_t suffix;
    if (fill_random(&suffix, sizeof suffix) != 0) {
        close(directory_fd);
        return NULL;
    }
    char temporary[64];
    snprintf(temporary, sizeof temporary, ".%s.%016llx", HOSTS_MAP_FILE_NAME, (unsigned long long)suffix);
    /* O_EXCL: a file someone put there is never taken over; 0644 whatever the umask: every
       process reads it. */
    int fd = openat(directory_fd, temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct hosts_map_writer *writer = NULL;
    void *base = MAP_FAILED;
    int saved;
    if (fd < 0) goto fail;
    if (fchmod(fd, 0644) != 0 || ftruncate(fd, (off_t)header.file_size) != 0) goto fail;
    base = mmap(NULL, (size_t)header.file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) goto fail;
    writer = calloc(1, sizeof *writer);
    if (writer == NULL) goto fail;
    writer->memory = calloc(slot_count, sizeof *writer->memory);
    if (writer->memory == NULL) goto fail;
    memcpy(base, &header, sizeof header);
    writer->base = base;
    writer->size = (size_t)header.file_size;
    writer->header = base;
    writer->slots = (struct hosts_map_slot *)(void *)((unsigned char *)base + sizeof header);
    writer->slot_count = slot_count;
    if (fill_random(&writer->next_nonce, sizeof writer->next_nonce) != 0 ||
        fill_random(writer->filler_key, sizeof writer->filler_key) != 0 ||
        fill_random(writer->secret, sizeof writer->secret) != 0)
        goto fail;
    struct stat created;
    if (fstat(fd, &created) != 0) goto fail;
    writer->device = created.st_dev;
    writer->inode = created.st_ino;
    /* Opened before the rename, retired after it: a reader that notices maps the new file. */
    int old = openat(directory_fd, HOSTS_MAP_FILE_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (renameat(directory_fd, temporary, directory_fd, HOSTS_MAP_FILE_NAME) != 0) {
        if (old >= 0) close(old);
        goto fail;
    }
    if (old >= 0) {
        retire(old);
        close(old);
    }
    close(fd);
    close(directory_fd);
    return writer;

fail:
    saved = errno;
    if (writer != NULL) {
        free(writer->memory);
        free(writer);
    }
    if (base != MAP_FAILED) munmap(base, (size_t)header.file_size);
    if (fd >= 0) {
        unlinkat(directory_fd, temporary, 0);
        close(fd);
    }
    close(directory_fd);
    errno = saved;
    return NULL;
}

static void xor_into(unsigned char *out, const unsigned char *stream, size_t length) {
    for (size_t i = 0; i < length; i++) out[i] ^= stream[i];
}

/* The slot for tag: its own (even flushed or expired: a key is never in two slots), else a free,
   flushed or expired one, else the earliest expiring. */
static uint32_t choose_slot(const struct hosts_map_writer *writer, const unsigned char tag[16], int64_t now_ns) {
    uint32_t mask = writer->slot_count - 1;
    uint32_t start = (uint32_t)(tag[0] | tag[1] << 8 | tag[2] << 16 | (uint32_t)tag[3] << 24);
    uint32_t epoch = (uint32_t)writer->header->epoch;
    uint32_t reusable = UINT32_MAX, earliest = start & mask;
    for (uint32_t probe = 0; probe < HOSTS_MAP_PROBES; probe++) {
        uint32_t index = (start + probe) & mask;
        const struct slot_memory *slot = &writer->memory[index];
        int live = slot->used && slot->epoch == epoch && slot->expires_ns > now_ns;
        if (slot->used && memcmp(slot->tag, tag, 16) == 0) return index;
        if (!live && reusable == UINT32_MAX) reusable = index;
        if (slot->expires_ns < writer->memory[earliest].expires_ns) earliest = index;
    }
    return reusable != UINT32_MAX ? reusable : earliest;
}

void hosts_map_writer_user_key(const struct hosts_map_writer *writer, uint32_t uid,
                               unsigned char key[HOSTS_MAP_KEY_BYTES]) {
    unsigned char input[4];
    for (int i = 0; i < 4; i++) input[i] = (unsigned char)(uid >> (8 * i));
    hosts_map_siphash128(writer->secret, input, sizeof input, key);
}

int hosts_map_writer_publish(struct hosts_map_writer *writer, const char *name, int family, uint32_t uid,
                             const char *addresses, unsigned count, int64_t expires_ns) {
    size_t name_length = strlen(name);
    if ((family != HOSTS_MAP_IPV4 && family != HOSTS_MAP_IPV6) || count > HOSTS_MAP_MAX_ADDRESSES ||
        expires_ns <= 0 || !hosts_map_name_is_canonical(name, name_length))
        return -1;
    struct hosts_map_payload payload = {.expires_ns = (uint64_t)expires_ns, .count = count};
    const char *text = addresses;
    for (unsigned i = 0; i < count; i++) {
        if (inet_pton(family == HOSTS_MAP_IPV4 ? AF_INET : AF_INET6, text, payload.addresses[i]) != 1) return -1;
        text += strlen(text) + 1;
    }
    unsigned char user_key[HOSTS_MAP_KEY_BYTES];
    hosts_map_writer_user_key(writer, uid, user_key);
    unsigned char key[HOSTS_MAP_RECORD_KEY_CAPACITY], tag[16];
    size_t key_length = hosts_map_record_key(user_key, name, name_length, family, key, tag);

    uint64_t nonce = writer->next_nonce++;
    unsigned char stream[16];
    unsigned char *sealed = (unsigned char *)&payload;
    for (unsigned block = 0; block <= count; block++) {
        hosts_map_keystream(user_key, key, key_length, nonce, block, stream);
        xor_into(sealed + 16 * block, stream, 16);
    }
    /* The blocks past count look as random as the rest: the count does not show. */
    for (unsigned block = count + 1; block <= HOSTS_MAP_MAX_ADDRESSES; block++) {
        unsigned char filler_input[9];
        memcpy(filler_input, key + key_length, 8);
        filler_input[8] = (unsigned char)block;
        hosts_map_siphash128(writer->filler_key, filler_input, sizeof filler_input, sealed + 16 * block);
    }

    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint32_t index = choose_slot(writer, tag, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
    struct hosts_map_slot *slot = &writer->slots[index];
    uint32_t epoch = (uint32_t)writer->header->epoch;
    uint32_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->sequence, sequence + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    slot->epoch = epoch;
    slot->nonce = nonce;
    memcpy(slot->tag, tag, 16);
    memcpy(&slot->sealed, &payload, sizeof payload);
    __atomic_store_n(&slot->sequence, sequence + 2, __ATOMIC_RELEASE);

    struct slot_memory *memory = &writer->memory[index];
    memcpy(memory->tag, tag, 16);
    memory->expires_ns = expires_ns;
    memory->epoch = epoch;
    memory->used = 1;
    return 0;
}

void hosts_map_writer_flush(struct hosts_map_writer *writer) {
    __atomic_store_n(&writer->header->epoch, writer->header->epoch + 1, __ATOMIC_RELEASE);
}

void hosts_map_writer_close(struct hosts_map_writer *writer) {
    if (writer == NULL) return;
    munmap(writer->base, writer->size);
    free(writer->memory);
    free(writer);
}

void hosts_map_writer_withdraw(struct hosts_map_writer *writer, const char *directory) {
    if (writer == NULL) return;
    __atomic_store_n(&writer->header->retired, 1, __ATOMIC_RELEASE);
    int directory_fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory_fd >= 0) {
        struct stat status;
        if (fstatat(directory_fd, HOSTS_MAP_FILE_NAME, &status, AT_SYMLINK_NOFOLLOW) == 0 &&
            status.st_dev == writer->device && status.st_ino == writer->inode)
            unlinkat(directory_fd, HOSTS_MAP_FILE_NAME, 0);
        close(directory_fd);
    }
    hosts_map_writer_close(writer);
}
