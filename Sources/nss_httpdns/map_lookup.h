/* Lookups in the daemon's hosts map, which this process maps read-only on first use. */
#ifndef NSS_HTTPDNS_MAP_LOOKUP_H
#define NSS_HTTPDNS_MAP_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "hosts_map.h"

/* 1 and *answer when the map holds an answer of name in family (HOSTS_MAP_IPV4 or HOSTS_MAP_IPV6)
   for uid (the caller's effective uid) unexpired at now_ns (map_now_ns); 0 for anything else:
   the socket answers. */
int map_lookup(const char *name, int family, uint32_t uid, int64_t now_ns, struct hosts_map_answer *answer);

/* Keeps the key the daemon handed to uid (the effective uid that asked) for the lookups after. */
void map_remember_key(uint32_t uid, const unsigned char key[HOSTS_MAP_KEY_BYTES]);

/* The current CLOCK_MONOTONIC time (the map's clock) in nanoseconds. */
int64_t map_now_ns(void);

#endif
