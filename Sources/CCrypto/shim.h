#pragma once
#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/provider.h>

/* libcrypto is opened with dlopen on first use (HTTPDNSCrypto's LibCrypto), so that a daemon
 * whose upstreams encrypt and sign nothing never needs it. Swift calls it only through this table
 * of pointers, one per function HTTPDNSCrypto uses, typed from OpenSSL's own declarations; nothing
 * here is a link-time reference to libcrypto. */
#define CCRYPTO_FUNCTIONS(X)                                                                      \
    X(HMAC) X(EVP_sha256) X(EVP_aes_128_cbc) X(EVP_aes_128_gcm)                                  \
    X(EVP_CIPHER_CTX_new) X(EVP_CIPHER_CTX_free) X(EVP_CipherInit_ex) X(EVP_CipherUpdate)         \
    X(EVP_CipherFinal_ex) X(EVP_CIPHER_CTX_ctrl) X(EVP_CIPHER_fetch) X(ERR_clear_error)           \
    X(OSSL_LIB_CTX_new) X(OSSL_PROVIDER_load)

struct ccrypto_functions {
#define CCRYPTO_FIELD(name) __typeof__(name) *_Nonnull name;
    CCRYPTO_FUNCTIONS(CCRYPTO_FIELD)
#undef CCRYPTO_FIELD
};

/* Fills `table` from `library` (a dlopen handle); returns the name of the first function the
 * library lacks, NULL when it has them all. */
static inline const char *ccrypto_resolve(void *library, struct ccrypto_functions *table) {
#define CCRYPTO_RESOLVE(name)                                                   \
    if ((table->name = (__typeof__(table->name))dlsym(library, #name)) == NULL) \
        return #name;
    CCRYPTO_FUNCTIONS(CCRYPTO_RESOLVE)
#undef CCRYPTO_RESOLVE
    return NULL;
}

/* The GCM controls, as ints (the macros are plain integers; named here so Swift sees one type). */
static const int ccrypto_gcm_set_iv_length = EVP_CTRL_GCM_SET_IVLEN;
static const int ccrypto_gcm_get_tag = EVP_CTRL_GCM_GET_TAG;
static const int ccrypto_gcm_set_tag = EVP_CTRL_GCM_SET_TAG;
