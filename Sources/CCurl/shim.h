#pragma once
#include <curl/curl.h>
#include <dlfcn.h>

/* libcurl is opened with dlopen on first use (HTTPDNSCurl's LibCurl), so that a daemon that never
 * asks an HTTP upstream never maps it. Swift calls it only through this table of pointers, one
 * per function HTTPDNSCurl uses, typed from curl.h's own declarations; nothing here is a
 * link-time reference to libcurl. */
#define CCURL_FUNCTIONS(X)                                                                           \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset) X(curl_easy_perform) \
    X(curl_easy_strerror) X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_slist_append)              \
    X(curl_slist_free_all)

struct ccurl_functions {
#define CCURL_FIELD(name) __typeof__(name) *_Nonnull name;
    CCURL_FUNCTIONS(CCURL_FIELD)
#undef CCURL_FIELD
};

/* Fills `table` from `library` (a dlopen handle); returns the name of the first function the
 * library lacks, NULL when it has them all. */
static inline const char *ccurl_resolve(void *library, struct ccurl_functions *table) {
#define CCURL_RESOLVE(name)                                                \
    if ((table->name = (__typeof__(table->name))dlsym(library, #name)) == NULL) \
        return #name;
    CCURL_FUNCTIONS(CCURL_RESOLVE)
#undef CCURL_RESOLVE
    return NULL;
}

/* curl_easy_setopt and curl_easy_getinfo are variadic: typed wrappers for Swift. The parentheses
 * around the member keep curl.h's type-checking macros of the same names out. */
typedef const struct ccurl_functions *ccurl_table;
static inline CURLcode ccurl_setopt_long(ccurl_table f, CURL *h, CURLoption o, long v) { return (f->curl_easy_setopt)(h, o, v); }
static inline CURLcode ccurl_setopt_string(ccurl_table f, CURL *h, CURLoption o, const char *v) { return (f->curl_easy_setopt)(h, o, v); }
static inline CURLcode ccurl_setopt_pointer(ccurl_table f, CURL *h, CURLoption o, void *v) { return (f->curl_easy_setopt)(h, o, v); }
static inline CURLcode ccurl_setopt_slist(ccurl_table f, CURL *h, CURLoption o, struct curl_slist *v) { return (f->curl_easy_setopt)(h, o, v); }
typedef size_t (*ccurl_data_callback)(char *, size_t, size_t, void *);
static inline CURLcode ccurl_setopt_callback(ccurl_table f, CURL *h, CURLoption o, ccurl_data_callback v) { return (f->curl_easy_setopt)(h, o, v); }
static inline CURLcode ccurl_getinfo_long(ccurl_table f, CURL *h, CURLINFO i, long *v) { return (f->curl_easy_getinfo)(h, i, v); }
static inline CURLcode ccurl_getinfo_double(ccurl_table f, CURL *h, CURLINFO i, double *v) { return (f->curl_easy_getinfo)(h, i, v); }
