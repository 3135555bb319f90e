/*
 * httpdns.h: C client of httpdnsd, the HTTPDNS cache and cookie jar daemon.
 *
 * Link with -lhttpdns (libhttpdns.so.0). The library carries its own Swift runtime, so a
 * consumer needs no Swift toolchain. It speaks the wire contract of API.md (newline-delimited
 * JSON-RPC 2.0 on a Unix socket); the OpenRPC document httpdnsd.openrpc.json describes every method.
 *
 * Threads: a handle may be used by one thread at a time. Different handles may be used from
 * different threads at once. Nothing here is async-signal-safe.
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
 *       -EINVAL      a NULL handle, a required NULL argument, or params_json not a JSON object;
 *       -ENOMEM      out of memory.
 *   errno values are far above -32000, so the two ranges never collide.
 * httpdns_last_error gives the code and a message for the last call on the handle.
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

/* JSON-RPC error codes the daemon returns (API.md). */
#define HTTPDNS_E_PARSE_ERROR            (-32700)
#define HTTPDNS_E_INVALID_REQUEST        (-32600)
#define HTTPDNS_E_METHOD_NOT_FOUND       (-32601)
#define HTTPDNS_E_INVALID_PARAMS         (-32602)
#define HTTPDNS_E_INTERNAL               (-32603)
#define HTTPDNS_E_HOST_NOT_FOUND         (-32001)
#define HTTPDNS_E_RESOLUTION_UNAVAILABLE (-32002)
#define HTTPDNS_E_LIMIT_EXCEEDED         (-32003)
#define HTTPDNS_E_PERMISSION_DENIED      (-32004)

/* A connection to the daemon. Opaque. */
typedef struct httpdns_client httpdns_client;

/*
 * Creates a handle for the daemon at socket_path. NULL applies the default rule: $HTTPDNSD_SOCKET,
 * else $XDG_RUNTIME_DIR/httpdnsd/httpdnsd.sock when that socket exists, else
 * /run/httpdnsd/httpdnsd.sock. The string is copied. Does not connect (see above).
 * Returns NULL only when out of memory. Release with httpdns_close.
 */
httpdns_client *httpdns_open(const char *socket_path);

/* Closes the connection and frees the handle. NULL is ignored. */
void httpdns_close(httpdns_client *c);

/*
 * Calls any method. params_json is a JSON object text (by-name params), or NULL for {}.
 * Returns the result as compact JSON text (caller frees with httpdns_free), or NULL on failure
 * (httpdns_last_error says why).
 */
char *httpdns_call(httpdns_client *c, const char *method, const char *params_json);

/*
 * Resolves host (default family "both", stale answers allowed). On success returns 0 and sets
 * *addrs to an array of *count strings, IPv4 addresses first, then IPv6 (caller frees with
 * httpdns_free_addrs(*addrs, *count)); *addrs is NULL when *count is 0. On failure returns a
 * negative code (HTTPDNS_E_HOST_NOT_FOUND when the name has no address) and sets *addrs = NULL,
 * *count = 0.
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
 * from url. host: the real host name when url holds an IP address, else NULL.
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
 * The code of the last call on this handle (0 when it succeeded) and, when message is not NULL,
 * sets *message to a one-line description ("" after a success). The message belongs to the handle
 * and stays valid until the next call on it or httpdns_close. A NULL handle gives -EINVAL.
 */
int httpdns_last_error(httpdns_client *c, const char **message);

/* Frees a string returned by this library. NULL is ignored. */
void httpdns_free(void *p);

/* Frees an address array from httpdns_resolve and its count strings. NULL is ignored. */
void httpdns_free_addrs(char **addrs, size_t count);

/* The library's version ("0.1.0"), a static string. */
const char *httpdns_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HTTPDNS_H */
