/*
 * refserver: the reference server for httpdnsd's wire format, the least work any server of this
 * protocol can do. It answers each request line with
 *
 *     {"jsonrpc":"2.0","id":<the request's id, byte for byte>,"result":<--result, default null>}
 *
 * without parsing the request beyond finding its top-level "id". Lines without one
 * (notifications) and blank lines get no answer. The benchmark passes the daemon's own answer as
 * --result, so both servers write the same bytes and the difference between them is the work of
 * deciding what to write.
 *
 * One thread, one level-triggered epoll set, like the daemon's loop thread. Reads and writes are
 * batched: each wake-up reads what the socket holds (one recv of up to 256 KiB), answers every
 * complete line in it, and writes all the answers with one send. While a client does not read
 * its answers, its requests are not read either.
 *
 *   refserver --socket PATH [--result JSON]     binds PATH, prints "ready" once it listens
 *   LISTEN_FDS=1 refserver [--result JSON]      serves the listening socket on fd 3 (socket activation)
 *
 * SIGTERM or SIGINT: removes the socket it bound and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "toplevel.h"

#define READ_CHUNK (256 * 1024)
#define MAX_LINE (1024 * 1024) /* the daemon's default MaxLineLength */

struct client {
	int fd;
	bool output_blocked;
	char *in;
	size_t in_len, in_cap;
	char *out;
	size_t out_len, out_sent, out_cap;
};

static const char answer_head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
static char *answer_tail; /* ,"result":...}\n */
static size_t answer_tail_len;
static int epoll_fd;

static void fail(const char *what)
{
	fprintf(stderr, "refserver: %s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * Finds the value of the top-level member "id" of a request line: a string (quotes included), a
 * number or null. Returns its length, 0 when the line has no such member.
 */
static size_t find_id(const char *line, const char *end, const char **value)
{
	struct top_level_walk walk = top_level_walk(line, end);
	struct top_level_member member;
	while (next_top_level_member(&walk, &member)) {
		if (!top_level_member_is(&member, "id")) continue;
		const char *q = member.value;
		if (q < end && *q == '"') {
			q++;
			while (q < end && *q != '"') q += (*q == '\\') ? 2 : 1;
			if (q >= end) return 0;
			q++;
		} else {
			while (q < end && *q != ',' && *q != '}' && *q != ' ' && *q != '\t') q++;
		}
		if (q == member.value) return 0;
		*value = member.value;
		return (size_t)(q - member.value);
	}
	return 0;
}

static void reserve(char **buffer, size_t *cap, size_t needed)
{
	if (needed <= *cap) return;
	size_t grown = *cap ? *cap : 4096;
	while (grown < needed) grown *= 2;
	*buffer = realloc(*buffer, grown);
	if (!*buffer) fail("realloc");
	*cap = grown;
}

/* head, id, tail: one reservation, three copies. */
static void append_answer(struct client *c, const char *id, size_t id_len)
{
	size_t head_len = sizeof answer_head - 1;
	reserve(&c->out, &c->out_cap, c->out_len + head_len + id_len + answer_tail_len);
	char *at = c->out + c->out_len;
	memcpy(at, answer_head, head_len);
	memcpy(at + head_len, id, id_len);
	memcpy(at + head_len + id_len, answer_tail, answer_tail_len);
	c->out_len += head_len + id_len + answer_tail_len;
}

static void drop(struct client *c)
{
	epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

static void watch(struct client *c, bool for_output)
{
	if (c->output_blocked == for_output) return;
	struct epoll_event ev = { .events = for_output ? EPOLLOUT : EPOLLIN, .data.ptr = c };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0) fail("epoll_ctl");
	c->output_blocked = for_output;
}

/* Sends what is pending; false when the client is gone. */
static bool send_pending(struct client *c)
{
	while (c->out_sent < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR) continue;
			if (errno != EAGAIN) return false;
			watch(c, true);
			return true;
		}
		c->out_sent += (size_t)n;
	}
	c->out_len = c->out_sent = 0;
	watch(c, false);
	return true;
}

/* Reads once, answers every complete line; false when the client is gone or misbehaves. */
static bool serve_input(struct client *c)
{
	reserve(&c->in, &c->in_cap, c->in_len + READ_CHUNK);
	ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
	if (n == 0) return false;
	if (n < 0) return errno == EAGAIN || errno == EINTR;
	c->in_len += (size_t)n;
	char *line = c->in, *end = c->in + c->in_len, *newline;
	while ((newline = memchr(line, '\n', (size_t)(end - line)))) {
		const char *id;
		size_t id_len = find_id(line, newline, &id);
		if (id_len) append_answer(c, id, id_len);
		line = newline + 1;
	}
	c->in_len = (size_t)(end - line);
	if (c->in_len > MAX_LINE) return false;
	memmove(c->in, line, c->in_len);
	return c->out_len ? send_pending(c) : true;
}

static void accept_all(int listener)
{
	for (;;) {
		int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) continue;
			if (errno == EAGAIN || errno == EMFILE || errno == ENFILE) return;
			fail("accept4");
		}
		struct client *c = calloc(1, sizeof *c);
		if (!c) fail("calloc");
		c->fd = fd;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) fail("epoll_ctl");
	}
}

static int bind_socket(const char *path)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof address.sun_path) {
		fprintf(stderr, "refserver: socket path too long: %s\n", path);
		exit(2);
	}
	strcpy(address.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) fail("socket");
	unlink(path);
	if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) fail("bind");
	if (listen(fd, SOMAXCONN) < 0) fail("listen");
	return fd;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *result = "null";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (strcmp(argv[i], "--result") == 0 && i + 1 < argc) {
			result = argv[++i];
		} else {
			fprintf(stderr, "usage: refserver --socket PATH [--result JSON]\n"
			                "       LISTEN_FDS=1 refserver [--result JSON]\n");
			return 2;
		}
	}
	answer_tail_len = strlen(",\"result\":") + strlen(result) + 2;
	answer_tail = malloc(answer_tail_len + 1);
	if (!answer_tail) fail("malloc");
	snprintf(answer_tail, answer_tail_len + 1, ",\"result\":%s}\n", result);

	int listener;
	const char *listen_fds = getenv("LISTEN_FDS"), *listen_pid = getenv("LISTEN_PID");
	bool activated = listen_fds && atoi(listen_fds) >= 1 && (!listen_pid || atoi(listen_pid) == getpid());
	if (activated) {
		listener = 3;
		if (fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK) < 0) fail("fcntl");
	} else if (path) {
		listener = bind_socket(path);
	} else {
		fprintf(stderr, "refserver: give --socket PATH, or start it with LISTEN_FDS=1\n");
		return 2;
	}

	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0) fail("sigprocmask");
	int signals = signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC);
	if (signals < 0) fail("signalfd");

	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0) fail("epoll_create1");
	/* The listener and the signalfd are told apart from clients by these two addresses. */
	static char listener_tag, signal_tag;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listener_tag };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &ev) < 0) fail("epoll_ctl");
	ev.data.ptr = &signal_tag;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, signals, &ev) < 0) fail("epoll_ctl");
	if (!activated) {
		printf("ready\n");
		fflush(stdout);
	}

	struct epoll_event events[256];
	for (;;) {
		int n = epoll_wait(epoll_fd, events, 256, -1);
		if (n < 0) {
			if (errno == EINTR) continue;
			fail("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			void *tag = events[i].data.ptr;
			if (tag == &listener_tag) {
				accept_all(listener);
			} else if (tag == &signal_tag) {
				if (!activated) unlink(path);
				return 0;
			} else {
				struct client *c = tag;
				bool alive = (events[i].events & EPOLLOUT) ? send_pending(c) : serve_input(c);
				if (!alive) drop(c);
			}
		}
	}
}
