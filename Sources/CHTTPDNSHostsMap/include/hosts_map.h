/* The hosts map: the daemon's forward answers in a file every process maps read-only, so the NSS
 * module answers a repeated lookup without a round trip (httpdnsd(8), SHARED HOSTS MAP).
 *
 * The file holds no name, no address and no key in clear. Each uid has a key of its own, which the
 * daemon derives from a secret of the file's (drawn with getrandom(2), never written to it) and
 * hands to that uid alone, in its resolve answers (hostsMapKey). A record's tag is
 * SipHash-2-4-128(uid key, 'T' name 0 family) and its payload (expiry, addresses) is XORed with a
 * keystream of SipHash-2-4-128(uid key, 'S' name 0 family nonce block): only the uid that asked can
 * find or read its records, and only for names it knows.
 *
 * One writer (the daemon's loop thread) and any number of readers. A record is written between two
 * increments of its sequence counter; a reader copies it and keeps the copy only when the counter
 * was even and unchanged. Flushing everything is one increment of the header's epoch: records of an
 * older epoch are not answers. A replaced file (restart, resize) has its header marked retired
 * after the new one is in place, so readers map the new one. */
#ifndef HTTPDNS_HOSTS_MAP_H
#define HTTPDNS_HOSTS_MAP_H

#include <stddef.h>
#include <stdint.h>

/* "HDNSMAP1", little-endian. */
#define HOSTS_MAP_MAGIC UINT64_C(0x3150414d534e4448)
enum { HOSTS_MAP_VERSION = 1 };

/* The file's name in its directory, HOSTS_MAP_DIRECTORY_NAME in the socket's directory (where
   systemd gives the daemon a directory of its own, RuntimeDirectory=httpdnsd/map). */
#define HOSTS_MAP_DIRECTORY_NAME "map"
#define HOSTS_MAP_FILE_NAME "hosts.map"

/* Addresses one record holds; an answer with more is not published (the socket answers it). */
enum { HOSTS_MAP_MAX_ADDRESSES = 8 };
/* Slots a key may sit in, from its hash on: a lookup reads at most this many. */
enum { HOSTS_MAP_PROBES = 8 };
/* Bounds on the slot count (a power of two): the configuration's HostsMapSize= within them. */
enum { HOSTS_MAP_MIN_SLOTS = 64, HOSTS_MAP_MAX_SLOTS = 1 << 20 };
/* Times a reader copies a record that is being written before it asks the socket instead. */
enum { HOSTS_MAP_READ_ATTEMPTS = 4 };

/* Address families as the key spells them. */
enum { HOSTS_MAP_IPV4 = 4, HOSTS_MAP_IPV6 = 6 };

struct hosts_map_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;
    uint64_t file_size;
    uint32_t slot_count;
    uint32_t slot_size;
    /* Which clock expiries are on (CLOCK_MONOTONIC) and the writer's time namespace
       (/proc/self/ns/time's device and inode; 0 without time namespaces): a reader elsewhere
       sees another monotonic clock and must not compare. */
    uint32_t clock_id;
    uint32_t retired; /* atomic: nonzero once another file replaced this one */
    uint64_t time_namespace_device;
    uint64_t time_namespace_inode;
    uint64_t epoch; /* atomic: records of another epoch are flushed */
    unsigned char reserved[64];
};

/* The sealed part of a record: block 0 is the expiry and the count, then one block per address
   (IPv4 in its first 4 bytes). */
struct hosts_map_payload {
    uint64_t expires_ns;
    uint32_t count;
    uint32_t zero;
    unsigned char addresses[HOSTS_MAP_MAX_ADDRESSES][16];
};

struct hosts_map_slot {
    uint32_t sequence; /* atomic: odd while the writer is in the record */
    uint32_t epoch;    /* the header's epoch (low 32 bits) when written */
    uint64_t nonce;    /* distinct per write: no keystream is used twice */
    unsigned char tag[16];
    struct hosts_map_payload sealed;
};

/* A mapped file as a reader checked it: the slot count is copied once, so a writer changing
   the header cannot move a lookup outside the mapping. */
struct hosts_map_view {
    const unsigned char *base;
    size_t size;
    uint32_t slot_count;
};

/* A uid's key for one map file. */
enum { HOSTS_MAP_KEY_BYTES = 16 };

/* What a hit gives: count addresses of the family asked for (0: the name has none, NO_DATA). */
struct hosts_map_answer {
    int64_t expires_ns;
    unsigned count;
    unsigned char addresses[HOSTS_MAP_MAX_ADDRESSES][16];
};

/* 0 when base[0..size) is a map this reader can use, written in the time namespace given (as
   hosts_map_time_namespace reads it); -1 otherwise. Fills view. */
int hosts_map_view_init(struct hosts_map_view *view, const void *base, size_t size, uint64_t time_namespace_device,
                        uint64_t time_namespace_inode);

/* Whether the writer replaced the file since (the reader maps the new one). */
int hosts_map_view_retired(const struct hosts_map_view *view);

/* 1 and *answer for an unexpired record of name in family under user_key at now_ns; 0 for
   anything else (absent, expired, flushed, being written, malformed): the socket answers then. */
int hosts_map_find(const struct hosts_map_view *view, const unsigned char user_key[HOSTS_MAP_KEY_BYTES],
                   const char *name, size_t name_length, int family, int64_t now_ns, struct hosts_map_answer *answer);

/* Whether name is what the map keys hold: lowercase ASCII letters, digits, '-' and '_', dots
   between labels of 1 to 63 bytes, at most 253 bytes, at least two labels. */
int hosts_map_name_is_canonical(const char *name, size_t length);

/* This process's time namespace (0, 0 when the kernel has none); -1 when it cannot be read. */
int hosts_map_time_namespace(uint64_t *device, uint64_t *inode);

/* A record's key material: 'T' or 'S', the name (canonical, so at most 253 bytes), 0, the
   family, then the keystream's 8-byte nonce and block number. */
enum { HOSTS_MAP_RECORD_KEY_CAPACITY = 1 + 253 + 1 + 1 + 8 + 1 };

/* Fills key with 'T' name 0 family and sets tag to its SipHash-128 under user_key (a slot's
   tag), then turns key's first byte to 'S', the keystream's domain. Returns the key's length,
   which hosts_map_keystream takes. Reader and writer both derive records through these two. */
size_t hosts_map_record_key(const unsigned char user_key[16], const char *name, size_t name_length, int family,
                            unsigned char key[HOSTS_MAP_RECORD_KEY_CAPACITY], unsigned char tag[16]);

/* Keystream block `block` of the record sealed with `nonce`: SipHash-128 under user_key of the
   key, the nonce (little-endian) and the block number. */
void hosts_map_keystream(const unsigned char user_key[16], unsigned char key[HOSTS_MAP_RECORD_KEY_CAPACITY],
                         size_t key_length, uint64_t nonce, unsigned block, unsigned char out[16]);

/* SipHash-2-4 with a 128-bit output (out[0..16)) or a 64-bit one. */
void hosts_map_siphash128(const unsigned char key[16], const void *data, size_t length, unsigned char out[16]);
uint64_t hosts_map_siphash64(const unsigned char key[16], const void *data, size_t length);

/* --- the writer (the daemon) ---------------------------------------------------------------- */

struct hosts_map_writer;

/* Creates directory/HOSTS_MAP_FILE_NAME anew with slot_count slots (a power of two within the
   bounds), mode 0644, replacing and retiring the one there (which must be a regular file of this
   user's). NULL with errno set on failure. */
struct hosts_map_writer *hosts_map_writer_create(const char *directory, uint32_t slot_count);

/* uid's key for this file (what the daemon hands to uid). */
void hosts_map_writer_user_key(const struct hosts_map_writer *writer, uint32_t uid,
                               unsigned char key[HOSTS_MAP_KEY_BYTES]);

/* Publishes name's answer for (family, uid): count addresses of that family in text, one after
   the other each ended by a NUL (0 for NO_DATA), valid until expires_ns on CLOCK_MONOTONIC. 0, or
   -1 when it is not published (too many addresses, a malformed one, a name that is not canonical). */
int hosts_map_writer_publish(struct hosts_map_writer *writer, const char *name, int family, uint32_t uid,
                             const char *addresses, unsigned count, int64_t expires_ns);

/* Makes every record published so far no answer. */
void hosts_map_writer_flush(struct hosts_map_writer *writer);

/* Unmaps; the file stays, with its records valid until they expire. */
void hosts_map_writer_close(struct hosts_map_writer *writer);

/* Retires the file (its readers go to the socket), removes it from directory when it is still
   the file there, and closes the writer: the daemon keeps no map any more. */
void hosts_map_writer_withdraw(struct hosts_map_writer *writer, const char *directory);

#endif
