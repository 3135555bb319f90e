/* The hosts map as a reader sees it: checks once, then lookups that make no system call and read
 * only inside the mapping whatever the file holds. libc only, no allocation: the NSS module runs
 * this in every process. */
#include "hosts_map.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

_Static_assert(sizeof(struct hosts_map_header) == 128, "the header is 128 bytes");
_Static_assert(sizeof(struct hosts_map_slot) == 176, "a slot is 176 bytes");

/* The bytes of a canonical label: lowercase letters, digits, '-' and '_'. */
static const unsigned char label_byte[256] = {
    ['-'] = 1, ['_'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

int hosts_map_name_is_canonical(const char *name, size_t length) {
    if (length == 0 || length > 253) return 0;
    size_t label_start = 0, labels = 1;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)name[i];
        if (label_byte[c]) continue;
        if (c != '.' || i == label_start || i - label_start > 63) return 0;
        label_start = i + 1;
        labels++;
    }
    return length > label_start && length - label_start <= 63 && labels >= 2;
}

int hosts_map_time_namespace(uint64_t *device, uint64_t *inode) {
    struct stat status;
    if (stat("/proc/self/ns/time", &status) == 0) {
        *device = (uint64_t)status.st_dev;
        *inode = (uint64_t)status.st_ino;
        return 0;
    }
    /* No time namespaces in this kernel (the ns directory is there without "time"). */
    if (errno == ENOENT && stat("/proc/self/ns", &status) == 0) {
        *device = 0;
        *inode = 0;
        return 0;
    }
    return -1;
}

int hosts_map_view_init(struct hosts_map_view *view, const void *base, size_t size, uint64_t time_namespace_device,
                        uint64_t time_namespace_inode) {
    struct hosts_map_header header;
    if (base == NULL || size < sizeof header) return -1;
    memcpy(&header, base, sizeof header);
    if (header.magic != HOSTS_MAP_MAGIC || header.version != HOSTS_MAP_VERSION ||
        header.header_size != sizeof header || header.slot_size != sizeof(struct hosts_map_slot) ||
        header.file_size != size || header.clock_id != (uint32_t)CLOCK_MONOTONIC ||
        header.time_namespace_device != time_namespace_device || header.time_namespace_inode != time_namespace_inode)
        return -1;
    uint32_t slots = header.slot_count;
    if (slots < HOSTS_MAP_MIN_SLOTS || slots > HOSTS_MAP_MAX_SLOTS || (slots & (slots - 1)) != 0) return -1;
    if ((size - sizeof header) / sizeof(struct hosts_map_slot) != slots ||
        (size - sizeof header) % sizeof(struct hosts_map_slot) != 0)
        return -1;
    view->base = base;
    view->size = size;
    view->slot_count = slots;
    return 0;
}

static const struct hosts_map_header *header_of(const struct hosts_map_view *view) {
    return (const struct hosts_map_header *)(const void *)view->base;
}

int hosts_map_view_retired(const struct hosts_map_view *view) {
    return __atomic_load_n(&header_of(view)->retired, __ATOMIC_ACQUIRE) != 0;
}

/* Copies a record the writer is not in the middle of: 0, or -1 after the attempts. */
static int copy_slot(const struct hosts_map_slot *slot, struct hosts_map_slot *copy) {
    for (int attempt = 0; attempt < HOSTS_MAP_READ_ATTEMPTS; attempt++) {
        uint32_t before = __atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE);
        if (before & 1) continue;
        memcpy(copy, (const void *)slot, sizeof *copy);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) == before) return 0;
    }
    return -1;
}

static void xor_block(unsigned char *out, const unsigned char *sealed, const unsigned char *stream, size_t length) {
    for (size_t i = 0; i < length; i++) out[i] = sealed[i] ^ stream[i];
}

size_t hosts_map_record_key(const unsigned char user_key[16], const char *name, size_t name_length, int family,
                            unsigned char key[HOSTS_MAP_RECORD_KEY_CAPACITY], unsigned char tag[16]) {
    size_t key_length = 1 + name_length;
    key[0] = 'T';
    memcpy(key + 1, name, name_length);
    key[key_length++] = 0;
    key[key_length++] = (unsigned char)family;
    hosts_map_siphash128(user_key, key, key_length, tag);
    key[0] = 'S';
    return key_length;
}

void hosts_map_keystream(const unsigned char user_key[16], unsigned char key[HOSTS_MAP_RECORD_KEY_CAPACITY],
                         size_t key_length, uint64_t nonce, unsigned block, unsigned char out[16]) {
    for (int i = 0; i < 8; i++) key[key_length + i] = (unsigned char)(nonce >> (8 * i));
    key[key_length + 8] = (unsigned char)block;
    hosts_map_siphash128(user_key, key, key_length + 9, out);
}

int hosts_map_find(const struct hosts_map_view *view, const unsigned char user_key[HOSTS_MAP_KEY_BYTES],
                   const char *name, size_t name_length, int family, int64_t now_ns, struct hosts_map_answer *answer) {
    if ((family != HOSTS_MAP_IPV4 && family != HOSTS_MAP_IPV6) || !hosts_map_name_is_canonical(name, name_length))
        return 0;
    const struct hosts_map_header *header = header_of(view);
    if (hosts_map_view_retired(view)) return 0;
    uint64_t epoch = __atomic_load_n(&header->epoch, __ATOMIC_ACQUIRE);

    unsigned char key[HOSTS_MAP_RECORD_KEY_CAPACITY], tag[16];
    size_t key_length = hosts_map_record_key(user_key, name, name_length, family, key, tag);

    const struct hosts_map_slot *slots =
        (const struct hosts_map_slot *)(const void *)(view->base + sizeof(struct hosts_map_header));
    uint32_t mask = view->slot_count - 1;
    uint32_t start = (uint32_t)(tag[0] | tag[1] << 8 | tag[2] << 16 | (uint32_t)tag[3] << 24);
    for (uint32_t probe = 0; probe < HOSTS_MAP_PROBES; probe++) {
        struct hosts_map_slot copy;
        if (copy_slot(&slots[(start + probe) & mask], &copy) != 0) return 0;
        if (memcmp(copy.tag, tag, 16) != 0) continue;
        if (copy.epoch != (uint32_t)epoch) return 0;

        unsigned char stream[16], block[16];
        hosts_map_keystream(user_key, key, key_length, copy.nonce, 0, stream);
        xor_block(block, (const unsigned char *)&copy.sealed, stream, 16);
        uint64_t expires;
        uint32_t count, zero;
        memcpy(&expires, block, 8);
        memcpy(&count, block + 8, 4);
        memcpy(&zero, block + 12, 4);
        if (zero != 0 || count > HOSTS_MAP_MAX_ADDRESSES || expires > INT64_MAX || (int64_t)expires <= now_ns)
            return 0;
        size_t address_length = family == HOSTS_MAP_IPV4 ? 4 : 16;
        for (uint32_t i = 0; i < count; i++) {
            hosts_map_keystream(user_key, key, key_length, copy.nonce, i + 1, stream);
            xor_block(answer->addresses[i], copy.sealed.addresses[i], stream, 16);
            for (size_t b = address_length; b < 16; b++)
                if (answer->addresses[i][b] != 0) return 0;
        }
        answer->expires_ns = (int64_t)expires;
        answer->count = count;
        return 1;
    }
    return 0;
}
