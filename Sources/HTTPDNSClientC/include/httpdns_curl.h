/*
 * httpdns_curl.h: IP-direct requests with libcurl, on httpdnsd's answers and cookie jar.
 *
 * Header-only: these static inline functions call libcurl from the program that includes them,
 * so libhttpdns.so itself does not link libcurl. Build with
 *     cc app.c $(pkg-config --cflags --libs httpdns libcurl)
 * libcurl 7.83 or later is needed (curl_easy_header).
 *
 * One request (one hop of a redirect chain):
 *     httpdns_curl_request request;
 *     httpdns_curl_prepare(c, easy, url, &request);   URL, CURLOPT_RESOLVE, CURLOPT_COOKIE
 *     curl_easy_perform(easy);
 *     httpdns_curl_store_cookies(c, easy, url);        every Set-Cookie into the jar
 *     httpdns_curl_request_cleanup(&request);
 * The URL, the Host header, TLS SNI and the certificate check keep the host name; the connection
 * goes to an address the daemon resolved. libcurl is handed the URL as httpdnsd's parser
 * serializes it (httpdns_parse_url), so libcurl and the jar agree on the host. Follow redirects
 * yourself, one hop at a time: read the Location header (curl_easy_header) and resolve it with
 * httpdns_parse_url(location, url, &next, NULL), which refuses a Location whose host libcurl
 * would read otherwise. Not CURLOPT_FOLLOWLOCATION (libcurl would resolve the next host itself
 * and send this hop's cookies to it), nor CURLINFO_REDIRECT_URL (libcurl's RFC 3986 reading).
 *
 * Or in one call, which also takes a URL that holds the address with the host name apart
 * (https://203.0.113.10/app for api.example.com) and survives a dead stale address:
 *     httpdns_curl_request request;
 *     int rc = httpdns_curl_perform(c, easy, url, host, 0, &request);
 *     ... rc: 0, a CURLcode (> 0) or a negative httpdns code; request.url is the URL that was
 *     requested, the base for its Location: httpdns_parse_url(location, request.url, &next, NULL)
 *     httpdns_curl_request_cleanup(&request);
 * A redirect's next hop is then performed with host NULL: it carries its own host's name, and
 * that host's own cookies.
 */
#ifndef HTTPDNS_CURL_H
#define HTTPDNS_CURL_H

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "httpdns.h"

#if LIBCURL_VERSION_NUM < 0x075300
#error "httpdns_curl.h needs libcurl 7.83 or later (curl_easy_header)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One prepared request: what CURLOPT_RESOLVE points to until the transfer is done, and what
   httpdns_curl_prepare_host and httpdns_curl_perform say about it (httpdns_curl_prepare leaves
   the other members NULL and 0). */
typedef struct httpdns_curl_request {
    struct curl_slist *resolve;
    /* The URL handed to libcurl (the host name in place of an IP literal given with a host):
       the URL the response's cookies belong to and the base of its Location. */
    char *url;
    /* The addresses came from an expired answer. */
    int stale;
    /* httpdns_curl_perform: every address of the stale answer refused or timed out, so it
       asked for a fresh answer and performed again on it. */
    int refreshed;
    /* httpdns_curl_perform: how the (last) transfer went. */
    CURLcode result;
} httpdns_curl_request;

static inline void httpdns_curl_request_init(httpdns_curl_request *request)
{
    request->resolve = NULL;
    request->url = NULL;
    request->stale = 0;
    request->refreshed = 0;
    request->result = CURLE_OK;
}

/* Releases what a prepare or httpdns_curl_perform kept for the transfer; call it after the
   transfer (after reading request->url, which it frees). */
static inline void httpdns_curl_request_cleanup(httpdns_curl_request *request)
{
    if (request) {
        curl_slist_free_all(request->resolve);
        httpdns_free(request->url);
        httpdns_curl_request_init(request);
    }
}

/*
 * The options both prepare calls set, from what the library answered: CURLOPT_URL to url,
 * CURLOPT_RESOLVE to entry (none when NULL) and CURLOPT_COOKIE to cookie (cleared when NULL or
 * empty). Takes entry and cookie (freed here); on failure cleans request up and leaves no
 * option pointing at freed memory. Not part of the API.
 */
static inline int httpdns_curl_apply_(CURL *easy, const char *url, char *entry, char *cookie,
                                      httpdns_curl_request *request)
{
    CURLcode result;

    if (entry != NULL) {
        request->resolve = curl_slist_append(NULL, entry);
        httpdns_free(entry);
        if (request->resolve == NULL) {
            httpdns_free(cookie);
            httpdns_curl_request_cleanup(request);
            return -ENOMEM;
        }
    }
    /* libcurl copies the strings; the list must live until the transfer is done. */
    result = curl_easy_setopt(easy, CURLOPT_URL, url);
    if (result == CURLE_OK)
        result = curl_easy_setopt(easy, CURLOPT_RESOLVE, request->resolve);
    if (result == CURLE_OK)
        result = curl_easy_setopt(easy, CURLOPT_COOKIE, (cookie != NULL && cookie[0] != '\0') ? cookie : NULL);
    httpdns_free(cookie);
    if (result != CURLE_OK) {
        curl_easy_setopt(easy, CURLOPT_RESOLVE, (struct curl_slist *)NULL);
        httpdns_curl_request_cleanup(request);
        return -EINVAL;
    }
    return 0;
}

/*
 * Sets CURLOPT_URL to url as httpdns_parse_url serializes it, CURLOPT_RESOLVE to the daemon's addresses for its host (nothing for
 * an IP-literal host) and CURLOPT_COOKIE to the jar's Cookie header for url (cleared when the
 * jar has none, so a previous hop's cookies are not sent). CURLOPT_COOKIE is the program's own
 * cookie string otherwise: set none of your own. Returns 0, or a negative code from
 * httpdns_parse_url (-ENOTUNIQ: an ambiguous url) or httpdns_prepare_request (httpdns_last_error
 * says why), -ENOMEM, or -EINVAL for NULL arguments or an option libcurl refused.
 */
static inline int httpdns_curl_prepare(httpdns_client *c, CURL *easy, const char *url,
                                       httpdns_curl_request *request)
{
    char *parsed = NULL;
    char *entry = NULL;
    char *cookie = NULL;
    int rc;

    if (request == NULL)
        return -EINVAL;
    httpdns_curl_request_init(request);
    if (easy == NULL)
        return -EINVAL;
    rc = httpdns_parse_url(url, NULL, &parsed, NULL);
    if (rc != 0)
        return rc;
    rc = httpdns_prepare_request(c, parsed, &entry, &cookie);
    if (rc == 0)
        rc = httpdns_curl_apply_(easy, parsed, entry, cookie, request);
    httpdns_free(parsed);
    return rc;
}

/*
 * After curl_easy_perform: hands every Set-Cookie of the last response (a redirect's too) to
 * the jar for url, the URL that was requested (request.url after httpdns_curl_prepare_host).
 * Returns 0 (also when there was none), or a negative code from httpdns_handle_set_cookie (the
 * daemon refused to store them: none was stored), -E2BIG for more than HTTPDNS_MAX_SET_COOKIE
 * values (none is stored), -ENOMEM, or -EPROTO when libcurl's header store is not readable.
 */
static inline int httpdns_curl_store_cookies(httpdns_client *c, CURL *easy, const char *url)
{
    struct curl_header *header = NULL;
    char **values;
    size_t amount;
    size_t i;
    int rc = 0;

    if (easy == NULL)
        return -EINVAL;
    if (curl_easy_header(easy, "Set-Cookie", 0, CURLH_HEADER, -1, &header) != CURLHE_OK)
        return 0;
    amount = header->amount;
    /* More than one call takes: refused whole rather than cut silently. */
    if (amount > HTTPDNS_MAX_SET_COOKIE)
        return -E2BIG;
    values = (char **)calloc(amount, sizeof *values);
    if (values == NULL)
        return -ENOMEM;
    /* A value stays valid only until the next curl_easy_header call: copy each (no strdup,
       which strict ISO C modes do not declare). */
    for (i = 0; i < amount && rc == 0; i++) {
        size_t length;
        if (curl_easy_header(easy, "Set-Cookie", i, CURLH_HEADER, -1, &header) != CURLHE_OK) {
            rc = -EPROTO;
            break;
        }
        length = strlen(header->value) + 1;
        values[i] = (char *)malloc(length);
        if (values[i] == NULL)
            rc = -ENOMEM;
        else
            memcpy(values[i], header->value, length);
    }
    if (rc == 0)
        rc = httpdns_handle_set_cookie(c, url, NULL, (const char *const *)values, amount);
    for (i = 0; i < amount; i++)
        free(values[i]);
    free(values);
    return rc;
}

/*
 * httpdns_curl_prepare for httpdns_prepare_request_host: url may hold an IP address with host
 * the name it serves (or NULL), flags 0 or HTTPDNS_NO_STALE. Sets CURLOPT_URL to the URL to
 * request (request->url: the name in place of the address), CURLOPT_RESOLVE to that address,
 * or to the daemon's answer for a URL that names its host, and CURLOPT_COOKIE to the jar's
 * cookies for request->url; request->stale says whether the answer had expired. Returns 0, or
 * a negative code from httpdns_prepare_request_host (-ENOTUNIQ: an ambiguous url, or an address
 * of several of the caller's names given without host; httpdns_last_error says which), -ENOMEM,
 * or -EINVAL for NULL arguments or an option libcurl refused.
 */
static inline int httpdns_curl_prepare_host(httpdns_client *c, CURL *easy, const char *url, const char *host,
                                            unsigned flags, httpdns_curl_request *request)
{
    char *entry = NULL;
    char *cookie = NULL;
    int rc;

    if (request == NULL)
        return -EINVAL;
    httpdns_curl_request_init(request);
    if (easy == NULL)
        return -EINVAL;
    rc = httpdns_prepare_request_host(c, url, host, flags, &request->url, &entry, &cookie, &request->stale);
    if (rc != 0)
        return rc;
    return httpdns_curl_apply_(easy, request->url, entry, cookie, request);
}

/* Whether a finished transfer never reached the server: no connection was made and nothing was
   sent, so its addresses refused or timed out (and a second try repeats no request). */
static inline int httpdns_curl_never_connected(CURL *easy, CURLcode result)
{
    curl_off_t connect_time = 0;
    long request_size = 0;

    if (result != CURLE_COULDNT_CONNECT && result != CURLE_OPERATION_TIMEDOUT)
        return 0;
    if (curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_time) != CURLE_OK ||
        curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size) != CURLE_OK)
        return 0;
    return connect_time == 0 && request_size == 0;
}

/* Whether two prepared requests connect to the same addresses. */
static inline int httpdns_curl_same_addresses(const httpdns_curl_request *a, const httpdns_curl_request *b)
{
    if (a->resolve == NULL || b->resolve == NULL)
        return a->resolve == b->resolve;
    return strcmp(a->resolve->data, b->resolve->data) == 0;
}

/*
 * One request (one hop) IP-direct with libcurl: httpdns_curl_prepare_host, curl_easy_perform,
 * then every Set-Cookie of the response into the jar for request->url (so under host for an
 * IP-literal url with host). When the answer was stale and the transfer failed to connect
 * (every address refused or timed out before anything was sent), it asks once more with
 * HTTPDNS_NO_STALE and, when the fresh answer has other addresses, performs again on them:
 * a dead stale address costs no failed request (request->refreshed says it happened; when the
 * daemon cannot get a fresh answer the first failure stands, and httpdns_last_error says why).
 * Set CURLOPT_CONNECTTIMEOUT for black-holed addresses; the rest of the handle is the caller's.
 * request is initialized here; release it with httpdns_curl_request_cleanup, also on failure.
 * Returns 0 when the transfer succeeded (whatever the HTTP status) and its cookies were stored;
 * a CURLcode (> 0, also in request->result) when the transfer failed, after storing the cookies
 * of a response that did arrive; or a negative code: preparing failed (nothing was sent), or
 * the transfer went as request->result says but storing its cookies failed (see
 * httpdns_curl_store_cookies; httpdns_last_error says why). No Set-Cookie is dropped silently.
 */
static inline int httpdns_curl_perform(httpdns_client *c, CURL *easy, const char *url, const char *host,
                                       unsigned flags, httpdns_curl_request *request)
{
    httpdns_curl_request fresh;
    int rc;

    rc = httpdns_curl_prepare_host(c, easy, url, host, flags, request);
    if (rc != 0)
        return rc;
    request->result = curl_easy_perform(easy);
    if (request->stale && httpdns_curl_never_connected(easy, request->result) &&
        httpdns_curl_prepare_host(c, easy, url, host, flags | HTTPDNS_NO_STALE, &fresh) == 0) {
        if (httpdns_curl_same_addresses(request, &fresh)) {
            /* Nothing new to try: the first transfer's failure stands. */
            curl_easy_setopt(easy, CURLOPT_RESOLVE, request->resolve);
            httpdns_curl_request_cleanup(&fresh);
        } else {
            httpdns_curl_request_cleanup(request);
            *request = fresh;
            request->refreshed = 1;
            request->result = curl_easy_perform(easy);
        }
    }
    rc = httpdns_curl_store_cookies(c, easy, request->url);
    if (rc != 0)
        return rc;
    return request->result == CURLE_OK ? 0 : (int)request->result;
}

#ifdef __cplusplus
}
#endif

#endif /* HTTPDNS_CURL_H */
