#include "daemon_call.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes (-ETIMEDOUT). */
static int wait_for(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t remaining = deadline - now_ms();
        if (remaining <= 0) return -ETIMEDOUT;
        struct pollfd pfd = {.fd = fd, .events = events};
        int ready = poll(&pfd, 1, (int)remaining);
        if (ready > 0) return 0; /* readiness, hang-up or error: the next send/recv tells which */
        if (ready < 0 && errno != EINTR) return -errno;
    }
}

/* connect(2) on a Unix stream socket only blocks while the listener's backlog is full, for at most
   SO_SNDTIMEO; a signal interrupts it without connecting, so it is retried with what is left. */
static int connect_until(int fd, const struct sockaddr_un *address, socklen_t length, int64_t deadline) {
    for (;;) {
        int64_t remaining = deadline - now_ms();
        if (remaining <= 0) return -ETIMEDOUT;
        struct timeval timeout = {.tv_sec = remaining / 1000, .tv_usec = (remaining % 1000) * 1000};
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) return -errno;
        if (connect(fd, (const struct sockaddr *)address, length) == 0) return 0;
        if (errno == EINTR) continue;
        /* EAGAIN: the backlog stayed full until the timeout. */
        return errno == EAGAIN ? -ETIMEDOUT : -errno;
    }
}

static int send_all(int fd, const char *data, size_t length, int64_t deadline) {
    size_t sent = 0;
    while (sent < length) {
        /* MSG_NOSIGNAL: the calling program's SIGPIPE disposition is not ours to trigger. */
        ssize_t n = send(fd, data + sent, length - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
            sent += (size_t)n;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_for(fd, POLLOUT, deadline);
            if (rc != 0) return rc;
        } else if (errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

static int receive_line(int fd, char *reply, size_t capacity, size_t *reply_length, int64_t deadline) {
    size_t used = 0;
    for (;;) {
        if (used == capacity) return -ERANGE;
        /* The reply is never there yet right after the request: wait first, then read. */
        int rc = wait_for(fd, POLLIN, deadline);
        if (rc != 0) return rc;
        ssize_t n = recv(fd, reply + used, capacity - used, MSG_DONTWAIT);
        if (n > 0) {
            const char *newline = memchr(reply + used, '\n', (size_t)n);
            used += (size_t)n;
            if (newline != NULL) {
                *reply_length = (size_t)(newline - reply);
                return 0;
            }
        } else if (n == 0) {
            return -ECONNRESET;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -errno;
        }
    }
}

int daemon_call_deadline_ms(void) {
    const char *text = secure_getenv("HTTPDNSD_NSS_TIMEOUT");
    if (text == NULL || text[0] < '0' || text[0] > '9') return HTTPDNS_DEFAULT_DEADLINE_MS;
    long value = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') return HTTPDNS_DEFAULT_DEADLINE_MS;
        value = value * 10 + (*p - '0');
        if (value > HTTPDNS_MAX_DEADLINE_MS) return HTTPDNS_DEFAULT_DEADLINE_MS;
    }
    return value < HTTPDNS_MIN_DEADLINE_MS ? HTTPDNS_DEFAULT_DEADLINE_MS : (int)value;
}

const char *daemon_socket_path(void) {
    const char *path = secure_getenv("HTTPDNSD_SOCKET");
    return path == NULL || path[0] == '\0' ? HTTPDNS_SYSTEM_SOCKET : path;
}

int daemon_call(const char *request, size_t request_length, char *reply, size_t capacity, size_t *reply_length) {
    int64_t deadline = now_ms() + daemon_call_deadline_ms();
    const char *path = daemon_socket_path();

    struct sockaddr_un address = {.sun_family = AF_UNIX};
    size_t path_length = strlen(path);
    if (path_length >= sizeof address.sun_path) return -ENAMETOOLONG;
    memcpy(address.sun_path, path, path_length + 1);
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_length + 1);

    /* A connection per lookup: no state survives the call, so threads and fork() need no care.
       SOCK_CLOEXEC: another thread's exec must not inherit it. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int rc = connect_until(fd, &address, address_length, deadline);
    if (rc == 0) rc = send_all(fd, request, request_length, deadline);
    /* A daemon that refuses the connection answers with one error line and closes, perhaps before
       the request is sent: that line is still there to read. */
    if (rc == -EPIPE || rc == -ECONNRESET) rc = 0;
    if (rc == 0) rc = receive_line(fd, reply, capacity, reply_length, deadline);
    close(fd);
    return rc;
}
