/* One request to httpdnsd over its Unix socket and the one line it answers. */
#ifndef NSS_HTTPDNS_DAEMON_CALL_H
#define NSS_HTTPDNS_DAEMON_CALL_H

#include <stddef.h>

/* The socket glibc's callers reach; HTTPDNSD_SOCKET overrides it, except in set-user-ID and
   set-group-ID programs (secure_getenv). */
#define HTTPDNS_SYSTEM_SOCKET "/run/httpdnsd/httpdnsd.sock"

/* The whole exchange (connect, send, reply) gets this long by default: the daemon's default
   Timeout= (2 s) plus 500 ms for its start-up under socket activation and the exchange itself.
   Past it, the next nsswitch source gets its turn, so a stopped daemon costs a lookup no more
   than this. HTTPDNSD_NSS_TIMEOUT (milliseconds, within the bounds below; read with
   secure_getenv) overrides it; a build may too (-DHTTPDNS_DEFAULT_DEADLINE_MS=...). */
#ifndef HTTPDNS_DEFAULT_DEADLINE_MS
#define HTTPDNS_DEFAULT_DEADLINE_MS 2500
#endif
enum { HTTPDNS_MIN_DEADLINE_MS = 100, HTTPDNS_MAX_DEADLINE_MS = 60000 };

/* The deadline in milliseconds: HTTPDNSD_NSS_TIMEOUT when it is a whole number within the
   bounds, else the default. */
int daemon_call_deadline_ms(void);

/* The socket's path: HTTPDNSD_SOCKET (not in set-user-ID programs), else HTTPDNS_SYSTEM_SOCKET. */
const char *daemon_socket_path(void);

/* Sends request (one line, ending in '\n') on a new connection and reads the reply line into
   reply[0..capacity). Returns 0 with *reply_length set (the newline not counted), or a negative
   errno: -ERANGE when the line does not fit, -ENOENT or -ECONNREFUSED when no daemon listens,
   -ETIMEDOUT past the deadline, -ECONNRESET when the connection ends before a whole line. */
int daemon_call(const char *request, size_t request_length, char *reply, size_t capacity, size_t *reply_length);

#endif
