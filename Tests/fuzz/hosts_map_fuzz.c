/* libFuzzer target hosts-map: the NSS module's reader of the hosts map (hosts_map_reader.c) on any
 * file. The first byte chooses how the input becomes a map: bit 0 repeats the input up to the size
 * its header declares (so a short input makes a map of a valid size), bit 1 plants the true tag of
 * the looked-up names, with an even sequence and the header's epoch, in the slot bits 4-6 choose,
 * so the fuzzed bytes reach the unsealing. The rest is the file. Every lookup must stay inside the
 * mapping (ASan) and a hit must be unexpired and hold at most HOSTS_MAP_MAX_ADDRESSES addresses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hosts_map.h"

static const char *const names[] = {"fuzz.example", "a.b", "n00.torture.test"};

/* The uid key the lookups and the planted tags use. */
static const unsigned char user_key[HOSTS_MAP_KEY_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void plant(unsigned char *map, const struct hosts_map_view *view, const char *name, int family, unsigned probe,
                  uint32_t epoch) {
    unsigned char key[64], tag[16];
    size_t length = strlen(name);
    key[0] = 'T';
    memcpy(key + 1, name, length);
    key[length + 1] = 0;
    key[length + 2] = (unsigned char)family;
    hosts_map_siphash128(user_key, key, length + 3, tag);
    uint32_t start = (uint32_t)(tag[0] | tag[1] << 8 | tag[2] << 16 | (uint32_t)tag[3] << 24);
    struct hosts_map_slot *slot =
        (struct hosts_map_slot *)(void *)(map + sizeof(struct hosts_map_header)) +
        ((start + probe) & (view->slot_count - 1));
    slot->sequence = 0;
    slot->epoch = epoch;
    memcpy(slot->tag, tag, 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned mode = data[0];
    data++;
    size--;
    (void)hosts_map_name_is_canonical((const char *)data, size);
    if (size < sizeof(struct hosts_map_header)) return 0;
    struct hosts_map_header header;
    memcpy(&header, data, sizeof header);
    size_t map_size = size;
    if ((mode & 1) && header.file_size >= sizeof header && header.file_size <= (1u << 21)) map_size = header.file_size;
    /* Its own allocation of exactly the map's size: a read past it is ASan's to report. */
    unsigned char *map = malloc(map_size);
    if (map == NULL) return 0;
    for (size_t i = 0; i < map_size; i++) map[i] = data[i % size];
    struct hosts_map_view view;
    if (hosts_map_view_init(&view, map, map_size, header.time_namespace_device, header.time_namespace_inode) == 0) {
        if (mode & 2) {
            for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
                plant(map, &view, names[n], HOSTS_MAP_IPV4, (mode >> 4) & 7, (uint32_t)header.epoch);
                plant(map, &view, names[n], HOSTS_MAP_IPV6, (mode >> 4) & 7, (uint32_t)header.epoch);
            }
        }
        int64_t now = (mode & 4) ? 0 : INT64_MAX / 2;
        for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
            for (int family = HOSTS_MAP_IPV4; family <= HOSTS_MAP_IPV6; family += 2) {
                struct hosts_map_answer answer;
                if (hosts_map_find(&view, user_key, names[n], strlen(names[n]), family, now, &answer) == 1 &&
                    (answer.count > HOSTS_MAP_MAX_ADDRESSES || answer.expires_ns <= now))
                    abort();
            }
        }
        (void)hosts_map_view_retired(&view);
    }
    free(map);
    return 0;
}
