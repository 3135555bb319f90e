/*
 * httpdns.h: C client of httpdnsd, the HTTPDNS cache and cookie jar daemon.
 *
 * Link with -lhttpdns (libhttpdns.so.0). The library carries its own Swift runtime, so a
 * consumer needs no Swift toolchain. It speaks the wire contract of httpdnsd-rpc(7) (newline-delimited
 * JSON-RPC 2.0 on a Unix socket); the OpenRPC document httpdnsd.openrpc.json describes every method.
 *
 * Threads: every function may be called from any thread. A handle may be shared by several
 * threads: calls on one handle are serialized inside (one waits while another talks to the
 * daemon), so give each thread its own handle when calls should run in parallel.
 * httpdns_last_error reports the calling thread's own last call on the handle. Closing a handle
 * while another thread is inside a call on it is safe: the call finishes, then the handle is
 * freed; calls that start after httpdns_close get -EINVAL. Nothing here is async-signal-safe.
 *
 * Arguments are checked, so that a bad one is an error code rather than the end of the host
 * process: NULL, closed or unknown handles give -EINVAL (or NULL, never a dereference); so do
 * NULL strings where one is required. Strings must be NUL-terminated
 * UTF-8: other bytes give -EILSEQ. A count larger than the library accepts gives -E2BIG.
 *
 * Signals: the library never raises SIGPIPE in the host process (it sends with MSG_NOSIGNAL),
 * and installs no signal handlers.
 *
 * Connection: httpdns_open does not connect; the first call does. When the daemon closed the
 * connection before answering (with socket activation it may have exited idle, or restarted),
 * a call reconnects and resends once, never twice. Each call waits at most 30 s for its reply
 * (longer for a resolve whose daemon-side timeout is longer).
 *
 * Return codes: 0 (or a non-negative count) on success. On failure a negative number:
 *   - a JSON-RPC error code from the daemon (HTTPDNS_E_* below), or
 *   - a negated errno for failures on this side:
 *       -ENOENT, -ECONNREFUSED, -EACCES, ... connect(2) to the socket failed (no daemon);
 *       -ETIMEDOUT   no reply in time (the connection is dropped, the next call reconnects);
 *       -ECONNRESET  the daemon closed the connection before answering, twice in a row;
 *       -EPROTO      the reply is not JSON-RPC, or lacks a member the contract promises;
 *       -EINVAL      a NULL, closed or unknown handle, a required NULL argument, params_json
 *                    not a JSON object, a url that is not an http(s) URL (httpdns_prepare_request,
 *                    httpdns_prepare_request_host, httpdns_parse_url), a host that is not a host
 *                    name or flags this header does not define (httpdns_prepare_request_host);
 *       -ENOTUNIQ    a url whose host curl would read otherwise than httpdnsd (httpdns_parse_url,
 *                    httpdns_prepare_request, httpdns_prepare_request_host): a backslash, a
 *                    percent-escape or a second '@' in its authority, or an IPv4 host not in
 *                    dotted-decimal form; and for httpdns_prepare_request_host, an IP-literal url
 *                    without host whose address the caller resolved for several names (the
 *                    message names them; the other functions answer that with
 *                    HTTPDNS_E_INVALID_PARAMS and the same message);
 *       -EILSEQ      a string argument that is not UTF-8;
 *       -E2BIG       more Set-Cookie values than HTTPDNS_MAX_SET_COOKIE;
 *       -ENOMEM      out of memory.
 *   errno values are far above -32000, so the two ranges never collide.
 * httpdns_last_error gives the code and a message for the calling thread's last call on the handle.
 *
 * Memory: every char * a function returns, and the array httpdns_resolve fills, was allocated
 * with malloc and belongs to the caller: release strings with httpdns_free and address arrays
 * with httpdns_free_addrs. The message from httpdns_last_error and the string from
 * httpdns_version belong to the library and must not be freed.
 */
#ifndef HTTPDNS_H
#define HTTPDNS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* JSON-RPC error codes the daemon returns (httpdnsd-rpc(7), ERRORS). */
#define HTTPDNS_E_PARSE_ERROR            (-32700)
#define HTTPDNS_E_INVALID_REQUEST        (-32600)
#define HTTPDNS_E_METHOD_NOT_FOUND       (-32601)
#define HTTPDNS_E_INVALID_PARAMS         (-32602)
#define HTTPDNS_E_INTERNAL               (-32603)
#define HTTPDNS_E_HOST_NOT_FOUND         (-32001)
#define HTTPDNS_E_RESOLUTION_UNAVAILABLE (-32002)
#define HTTPDNS_E_LIMIT_EXCEEDED         (-32003)
#define HTTPDNS_E_PERMISSION_DENIED      (-32004)

/* The most Set-Cookie values one httpdns_handle_set_cookie call takes (the daemon takes 256). */
#define HTTPDNS_MAX_SET_COOKIE 1024

/* A connection to the daemon. Opaque. */
typedef struct httpdns_client httpdns_client;

/*
 * Creates a handle for the daemon at socket_path. NULL applies the default rule: $HTTPDNSD_SOCKET,
 * else $XDG_RUNTIME_DIR/httpdnsd/httpdnsd.sock when that socket exists, else
 * /run/httpdnsd/httpdnsd.sock. The string is copied. Does not connect (see above).
 * Returns NULL when out of memory, or with errno EILSEQ when socket_path is not UTF-8.
 * Release with httpdns_close.
 */
httpdns_client *httpdns_open(const char *socket_path);

/* Closes the connection and frees the handle. NULL, and a handle already closed, are ignored. */
void httpdns_close(httpdns_client *c);

/*
 * Calls any method. params_json is a JSON object text (by-name params), or NULL for {}.
 * Returns the result as compact JSON text (caller frees with httpdns_free), or NULL on failure
 * (httpdns_last_error says why).
 */
char *httpdns_call(httpdns_client *c, const char *method, const char *params_json);

/*
 * Resolves host (default family "both", stale answers allowed). On success returns 0 and sets
 * *addrs to an array of *count strings, IPv4 addresses first, then IPv6, followed by a NULL
 * (caller frees with httpdns_free_addrs(*addrs, *count)); *addrs is NULL when *count is 0.
 * On failure returns a negative code (HTTPDNS_E_HOST_NOT_FOUND when the name has no address)
 * and sets *addrs = NULL, *count = 0 (when addrs and count are not NULL).
 */
int httpdns_resolve(httpdns_client *c, const char *host, char ***addrs, size_t *count);

/*
 * The value of the Cookie request header for a request to url ("" when no cookie matches).
 * host: the real host name when url holds an IP address, else NULL.
 * Returns a string the caller frees with httpdns_free, or NULL on failure.
 */
char *httpdns_get_cookie_header(httpdns_client *c, const char *url, const char *host);

/*
 * Stores the n Set-Cookie header values (each without the "Set-Cookie:" name) of a response
 * from url (n at most HTTPDNS_MAX_SET_COOKIE). host: the real host name when url holds an IP
 * address, else NULL.
 * Returns 0 when the daemon processed them (cookies it rejected, e.g. for a public suffix, are
 * not an error; httpdns_call("handleSetCookie", ...) reports them), or a negative code.
 */
int httpdns_handle_set_cookie(httpdns_client *c, const char *url, const char *host,
                              const char *const *set_cookie, size_t n);

/*
 * Deletes the cookies that httpdns_get_cookie_header would return for url.
 * Returns how many were deleted (>= 0), or a negative code.
 */
long httpdns_delete_cookies(httpdns_client *c, const char *url);

/*
 * For one request IP-direct (curl's --resolve, libcurl's CURLOPT_RESOLVE): url is the URL as
 * requested, http or https, with the host name. Sets *resolve_entry to "host:port:addr[,addr...]"
 * from the daemon's answer for the host (IPv6 addresses in brackets; NULL when the host is an IP
 * address), and *cookie_header to the value of the Cookie header the jar holds for url ("" when
 * none). Either pointer may be NULL when that part is not wanted; both strings are freed with
 * httpdns_free. Returns 0, or a negative code (then both are NULL): HTTPDNS_E_HOST_NOT_FOUND
 * when the host has no address. After the response, hand its Set-Cookie values to
 * httpdns_handle_set_cookie with the same url. httpdns_curl.h does all this for libcurl.
 */
int httpdns_prepare_request(httpdns_client *c, const char *url, char **resolve_entry, char **cookie_header);

/* Flags of httpdns_prepare_request_host. */
/* Refuse an expired answer: resolve with allowStale false, so the daemon answers from the
   upstreams (or a fresh cache entry) or fails. For a second try after the addresses of a stale
   answer refused or timed out. */
#define HTTPDNS_NO_STALE 0x1u

/*
 * httpdns_prepare_request for a request that may also go to an address the caller chose, with the
 * host name it serves given apart (curl's IP-direct pattern: https://203.0.113.10/app for
 * api.example.com). Sets, for whichever pointers are not NULL (each string freed with
 * httpdns_free):
 *   *request_url    the URL to request, as httpdnsd's parser serializes it: url itself, or, when
 *                   url holds an IP literal and host is given, url with host in place of the
 *                   address (scheme, port, path, query kept). Hand libcurl this URL: the Host
 *                   header, TLS SNI, the certificate check and the cookie jar then all use the
 *                   name, and it is the base to resolve a Location against.
 *   *resolve_entry  the CURLOPT_RESOLVE entry "host:port:addr[,addr...]" for *request_url: the
 *                   URL's own address when url holds one and host is given (no resolve), else the
 *                   daemon's answer for the URL's host; NULL for an IP-literal url without host.
 *   *cookie_header  the jar's Cookie header for *request_url ("" when none): the cookies of host
 *                   for an IP-literal url with host; for one without host, the cookies of the one
 *                   name the caller resolved to that address (httpdnsd-rpc(7), domain
 *                   normalization), or the address's own when it resolved none.
 *   *stale          1 when the addresses came from an expired answer (served while the daemon
 *                   refreshes it), else 0.
 * host: the host name the URL's IP address was resolved for, or NULL. With a url that names its
 * host, host is NULL or that same name. flags: 0, or HTTPDNS_NO_STALE (nothing to do where
 * nothing is resolved: an IP-literal url).
 * Returns 0, or a negative code (then every output is NULL, *stale 0): HTTPDNS_E_HOST_NOT_FOUND
 * when the host has no address, -ENOTUNIQ for an ambiguous url and for an IP-literal url without
 * host whose address the caller resolved for several host names (httpdns_last_error names them:
 * call again with the one meant as host), -EINVAL (see above). An IP-literal url always asks
 * the jar, so that such an address stops the request before it is sent.
 * After the response, hand its Set-Cookie values to httpdns_handle_set_cookie with *request_url.
 * httpdns_curl.h does all this for libcurl (httpdns_curl_perform), with the second try on a
 * fresh answer when every address of a stale one failed to connect.
 */
int httpdns_prepare_request_host(httpdns_client *c, const char *url, const char *host, unsigned flags,
                                 char **request_url, char **resolve_entry, char **cookie_header, int *stale);

/*
 * Parses url with httpdnsd's own URL parser (the WHATWG URL Standard, as browsers read URLs:
 * backslashes are path separators, hosts are percent-decoded, IDNA-converted and lowercased,
 * "0x7f.1" is 127.0.0.1), resolving it against base when base is not NULL (a Location header,
 * relative or absolute, against the URL that answered with it). Needs no handle and no daemon.
 * Sets *serialized to the URL as httpdnsd reads it, which is what to hand libcurl, so that
 * libcurl and the cookie jar agree on the site; and *host to its host (an IPv6 address without
 * brackets). Either pointer may be NULL; both strings are freed with httpdns_free.
 * Returns 0, or (then both are NULL) -EINVAL when url or base is NULL or not an http(s) URL with
 * a host, -ENOTUNIQ when RFC 3986 (libcurl) would read another host from url than httpdnsd
 * (http://bank.example\@attacker/ is bank.example to one and attacker to the other: follow no
 * such Location), -EILSEQ for a string that is not UTF-8, -ENOMEM.
 */
int httpdns_parse_url(const char *url, const char *base, char **serialized, char **host);

/*
 * The code of the calling thread's last call on this handle (0 when it succeeded or when there
 * was none) and, when message is not NULL, sets *message to a one-line description ("" after a
 * success). The message belongs to the handle and stays valid until this thread's next call on it,
 * or httpdns_close. An invalid handle gives -EINVAL and sets *message to NULL.
 */
int httpdns_last_error(httpdns_client *c, const char **message);

/* Frees a string returned by this library. NULL is ignored. */
void httpdns_free(void *p);

/* Frees an address array from httpdns_resolve and its strings (at most count, never past the
   NULL that ends the array). NULL is ignored. */
void httpdns_free_addrs(char **addrs, size_t count);

/* The library's version ("0.1.0"), a static string. */
const char *httpdns_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HTTPDNS_H */
