/* SipHash-2-4 (Aumasson and Bernstein, 2012), 64- and 128-bit outputs. Written for the hosts map,
 * whose reader is libc-only: checked against the reference vectors and libsodium's
 * crypto_shorthash_siphashx24 (HostsMapTests). */
#include "hosts_map.h"

#include <endian.h>
#include <string.h>

/* Every helper is forced inline and the state kept in locals: called through pointers, the
   rounds of a lookup's six hashes were most of the module's time on a map hit. */
#define SIP_INLINE static inline __attribute__((always_inline))

SIP_INLINE uint64_t load64(const unsigned char *p) {
    uint64_t value;
    memcpy(&value, p, 8);
    return le64toh(value);
}

SIP_INLINE void store64(unsigned char *p, uint64_t value) {
    value = htole64(value);
    memcpy(p, &value, 8);
}

SIP_INLINE uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct sip_state {
    uint64_t v0, v1, v2, v3;
};

SIP_INLINE void sip_round(struct sip_state *s) {
    s->v0 += s->v1;
    s->v1 = rotl(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rotl(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rotl(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rotl(s->v2, 32);
}

SIP_INLINE void sip_compress(struct sip_state *s, uint64_t m) {
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

SIP_INLINE void sip_absorb(struct sip_state *s, const unsigned char key[16], const unsigned char *in, size_t length,
                           int wide) {
    uint64_t k0 = load64(key), k1 = load64(key + 8);
    s->v0 = k0 ^ UINT64_C(0x736f6d6570736575);
    s->v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
    s->v2 = k0 ^ UINT64_C(0x6c7967656e657261);
    s->v3 = k1 ^ UINT64_C(0x7465646279746573);
    if (wide) s->v1 ^= 0xee;
    size_t whole = length - length % 8;
    for (size_t i = 0; i < whole; i += 8) sip_compress(s, load64(in + i));
    unsigned char last[8] = {0};
    memcpy(last, in + whole, length % 8);
    sip_compress(s, load64(last) | (uint64_t)(length & 0xff) << 56);
}

SIP_INLINE uint64_t sip_finish(struct sip_state *s, uint64_t marker) {
    s->v2 ^= marker;
    sip_round(s);
    sip_round(s);
    sip_round(s);
    sip_round(s);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

uint64_t hosts_map_siphash64(const unsigned char key[16], const void *data, size_t length) {
    struct sip_state s;
    sip_absorb(&s, key, data, length, 0);
    return sip_finish(&s, 0xff);
}

void hosts_map_siphash128(const unsigned char key[16], const void *data, size_t length, unsigned char out[16]) {
    struct sip_state s;
    sip_absorb(&s, key, data, length, 1);
    store64(out, sip_finish(&s, 0xee));
    s.v1 ^= 0xdd;
    store64(out + 8, sip_finish(&s, 0));
}
