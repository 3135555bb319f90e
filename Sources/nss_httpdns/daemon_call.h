/* One request to httpdnsd over its Unix socket and the one line it answers. */
#ifndef NSS_HTTPDNS_DAEMON_CALL_H
#define NSS_HTTPDNS_DAEMON_CALL_H

#include <stddef.h>

/* The socket glibc's callers reach; HTTPDNSD_SOCKET overrides it, except in set-user-ID and
   set-group-ID programs (secure_getenv). */
#define HTTPDNS_SYSTEM_SOCKET "/run/httpdnsd/httpdnsd.sock"

/* The whole exchange (connect, send, reply) gets this long. The daemon answers within its own
   Timeout= (2 s by default) plus its start-up under socket activation; past this, the next
   nsswitch source gets its turn. */
enum { HTTPDNS_DEADLINE_MS = 5000 };

/* Sends request (one line, ending in '\n') on a new connection and reads the reply line into
   reply[0..capacity). Returns 0 with *reply_length set (the newline not counted), or a negative
   errno: -ERANGE when the line does not fit, -ENOENT or -ECONNREFUSED when no daemon listens,
   -ETIMEDOUT past the deadline, -ECONNRESET when the connection ends before a whole line. */
int daemon_call(const char *request, size_t request_length, char *reply, size_t capacity, size_t *reply_length);

#endif
