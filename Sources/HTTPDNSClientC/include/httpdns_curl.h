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

/* What CURLOPT_RESOLVE points to until the transfer is done. */
typedef struct httpdns_curl_request {
    struct curl_slist *resolve;
} httpdns_curl_request;

/* Releases what httpdns_curl_prepare kept for the transfer; call it after curl_easy_perform. */
static inline void httpdns_curl_request_cleanup(httpdns_curl_request *request)
{
    if (request) {
        curl_slist_free_all(request->resolve);
        request->resolve = NULL;
    }
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
    CURLcode result;
    int rc;

    if (request == NULL)
        return -EINVAL;
    request->resolve = NULL;
    if (easy == NULL)
        return -EINVAL;
    rc = httpdns_parse_url(url, NULL, &parsed, NULL);
    if (rc != 0)
        return rc;
    rc = httpdns_prepare_request(c, parsed, &entry, &cookie);
    if (rc != 0) {
        httpdns_free(parsed);
        return rc;
    }
    if (entry != NULL) {
        request->resolve = curl_slist_append(NULL, entry);
        httpdns_free(entry);
        if (request->resolve == NULL) {
            httpdns_free(cookie);
            httpdns_free(parsed);
            return -ENOMEM;
        }
    }
    /* libcurl copies the strings. */
    result = curl_easy_setopt(easy, CURLOPT_URL, parsed);
    httpdns_free(parsed);
    if (result == CURLE_OK)
        result = curl_easy_setopt(easy, CURLOPT_RESOLVE, request->resolve);
    if (result == CURLE_OK)
        result = curl_easy_setopt(easy, CURLOPT_COOKIE, (cookie != NULL && cookie[0] != '\0') ? cookie : NULL);
    httpdns_free(cookie);
    if (result != CURLE_OK) {
        httpdns_curl_request_cleanup(request);
        return -EINVAL;
    }
    return 0;
}

/*
 * After curl_easy_perform: hands every Set-Cookie of the last response (a redirect's too) to
 * the jar for url, the URL that was requested. Returns 0 (also when there was none), or a
 * negative code from httpdns_handle_set_cookie, -ENOMEM, or -EPROTO when libcurl's header store
 * is not readable.
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
    if (amount > HTTPDNS_MAX_SET_COOKIE)
        amount = HTTPDNS_MAX_SET_COOKIE;
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

#ifdef __cplusplus
}
#endif

#endif /* HTTPDNS_CURL_H */
