#pragma once
#include <dlfcn.h>
#include <hiredis/hiredis.h>

/* hiredis opens the connection (redisConnectWithTimeout, redisConnectUnixWithTimeout); the
 * commands and replies go over its socket in Swift (RedisConnection), with deadlines and size
 * limits hiredis's own reader does not have.
 *
 * hiredis is opened with dlopen on first use (HTTPDNSRedis's LibHiredis), so that a daemon
 * without a fleet never maps it. Swift calls it only through this table of pointers, typed from
 * hiredis.h's own declarations; nothing here is a link-time reference to hiredis. */
#define CHIREDIS_FUNCTIONS(X) X(redisConnectWithTimeout) X(redisConnectUnixWithTimeout) X(redisFree)

struct chiredis_functions {
#define CHIREDIS_FIELD(name) __typeof__(name) *_Nonnull name;
    CHIREDIS_FUNCTIONS(CHIREDIS_FIELD)
#undef CHIREDIS_FIELD
};

/* Fills `table` from `library` (a dlopen handle); returns the name of the first function the
 * library lacks, NULL when it has them all. */
static inline const char *chiredis_resolve(void *library, struct chiredis_functions *table) {
#define CHIREDIS_RESOLVE(name)                                                  \
    if ((table->name = (__typeof__(table->name))dlsym(library, #name)) == NULL) \
        return #name;
    CHIREDIS_FUNCTIONS(CHIREDIS_RESOLVE)
#undef CHIREDIS_RESOLVE
    return NULL;
}
