#pragma once
#include <dlfcn.h>
#include <sodium.h>

/* libsodium is opened with dlopen on first use (HTTPDNSSodium's LibSodium), so that a daemon
 * without a fleet never maps it. Swift calls it only through this table of pointers, one per
 * function HTTPDNSSodium uses, typed from sodium.h's own declarations; nothing here is a
 * link-time reference to libsodium. */
#define CSODIUM_FUNCTIONS(X)                                                                  \
    X(sodium_init) X(randombytes_buf) X(crypto_generichash) X(crypto_kdf_derive_from_key)     \
    X(crypto_aead_xchacha20poly1305_ietf_encrypt) X(crypto_aead_xchacha20poly1305_ietf_decrypt)

struct csodium_functions {
#define CSODIUM_FIELD(name) __typeof__(name) *_Nonnull name;
    CSODIUM_FUNCTIONS(CSODIUM_FIELD)
#undef CSODIUM_FIELD
};

/* Fills `table` from `library` (a dlopen handle); returns the name of the first function the
 * library lacks, NULL when it has them all. */
static inline const char *csodium_resolve(void *library, struct csodium_functions *table) {
#define CSODIUM_RESOLVE(name)                                                   \
    if ((table->name = (__typeof__(table->name))dlsym(library, #name)) == NULL) \
        return #name;
    CSODIUM_FUNCTIONS(CSODIUM_RESOLVE)
#undef CSODIUM_RESOLVE
    return NULL;
}
