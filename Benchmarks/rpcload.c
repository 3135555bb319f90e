/*
 * rpcload: closed-loop load generator for newline-framed JSON-RPC 2.0 over a Unix stream
 * socket (httpdnsd's wire format: one request per line, one response per line, matched by id).
 *
 * Each of --connections connections keeps --depth requests in flight: as soon as a response
 * frees a slot, the next request goes out. Requests come from a template file, one JSON line
 * per request with the token {{id}} where the request id goes; the lines are used in turn, each
 * connection starting at a different line so that a mixed file stays mixed at every moment.
 * A line may also hold {{unique}} once, after {{id}}: it becomes a number no other request
 * gets (a count of the requests sent, from the clock's microseconds at the start), so a line
 * sent again, in this run or a later one, still carries a new value.
 *
 * Two modes:
 *   duration (default)  --warmup seconds unmeasured, then --seconds measured; responses that
 *                       arrive inside the measured window count, with their latency (request
 *                       written -> response line read).
 *   --once              every template line is sent exactly once (spread over the connections);
 *                       the run ends when all are answered. Used to fill a server with state.
 *
 * With --writes METHOD[,METHOD...], the lines calling those methods are writes and the others
 * reads: the report gives the latency of each kind apart as well (a mix's reads are not held to
 * the time its writes wait for their commit).
 *
 * A response counts as ok when its top-level object has "result", has no "error", and contains
 * the --expect substring if one is given. Everything else is an error; the first one is shown on
 * stderr. One thread, one epoll set: the generator costs one core at most, which the report's
 * "cpu" figure shows.
 *
 * Exit status: 0 every response ok; 1 errors, unmatched ids, timeouts or no responses;
 * 2 usage; 3 could not connect, or the server closed a connection.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "toplevel.h"

/* Ids carry the slot in their low bits, so a response finds its request without a search. */
#define SLOT_BITS 10
#define MAX_DEPTH (1u << SLOT_BITS)
#define READ_CHUNK (64 * 1024)
#define MAX_LINE (64 * 1024 * 1024)

struct request_template {
	char *before_id, *after_id, *after_unique; /* after_unique: NULL without {{unique}} */
	size_t before_len, after_len, after_unique_len;
	bool write; /* its method is one of --writes */
};

struct slot {
	uint64_t serial;  /* which request of this connection occupies the slot */
	uint64_t sent_ns;
	bool busy, write;
};

struct connection {
	int fd;
	bool closed, waiting_for_output;
	uint64_t serial;          /* requests sent on this connection so far */
	uint64_t next_template;   /* duration mode: this connection's position in the templates */
	struct slot *slots;
	uint32_t *free_slots;
	uint32_t free_count;
	char *in;
	size_t in_len, in_cap;
	char *out;
	size_t out_len, out_sent, out_cap;
};

struct options {
	const char *socket_path, *template_path, *expect, *writes;
	int connections, depth;
	double seconds, warmup, timeout;
	bool once, json;
};

struct latencies {
	uint64_t *ns;
	size_t count, cap;
};

struct tally {
	uint64_t responses, ok, error_member, no_result, expect_missing, unmatched, timeouts, closed;
	struct latencies all, reads, writes;
	bool reported_first_error;
};

static struct options opt = { .connections = 1, .depth = 1, .seconds = 2, .warmup = 0.5, .timeout = 5 };
static struct request_template *templates;
static size_t template_count, longest_request;
static uint64_t requests_sent;   /* what {{unique}} becomes */
static uint64_t once_next;       /* --once: the next template line to send, over all connections */
static struct tally tally;
static uint64_t measure_from_ns, measure_until_ns;
static uint64_t last_response_ns; /* stall detection */

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "rpcload: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void *checked_alloc(size_t size)
{
	void *p = calloc(1, size ? size : 1);
	if (!p) die("out of memory");
	return p;
}

/* ---- templates ---------------------------------------------------------------------------- */

/* Whether the line's top-level "method" is one of the comma-separated names in --writes. */
static bool calls_a_write(const char *line, size_t len)
{
	if (!opt.writes) return false;
	struct top_level_walk walk = top_level_walk(line, line + len);
	struct top_level_member member;
	while (next_top_level_member(&walk, &member)) {
		if (!top_level_member_is(&member, "method") || *member.value != '"') continue;
		const char *name = member.value + 1, *end = line + len, *close = name;
		while (close < end && *close != '"') close++;
		size_t name_len = (size_t)(close - name);
		for (const char *w = opt.writes; *w;) {
			size_t n = strcspn(w, ",");
			if (n == name_len && memcmp(w, name, n) == 0) return true;
			w += n + (w[n] == ',');
		}
		return false;
	}
	return false;
}

static void add_template(const char *line, size_t len)
{
	const char *token = memmem(line, len, "{{id}}", 6);
	if (!token) {
		fprintf(stderr, "rpcload: a template line has no {{id}}: %.*s\n", (int)len, line);
		exit(2);
	}
	templates = realloc(templates, (template_count + 1) * sizeof *templates);
	if (!templates) die("out of memory");
	struct request_template *t = &templates[template_count++];
	t->before_len = (size_t)(token - line);
	t->after_len = len - t->before_len - 6;
	const char *unique = memmem(token + 6, t->after_len, "{{unique}}", 10);
	t->after_unique = NULL;
	t->after_unique_len = 0;
	if (unique) {
		t->after_unique_len = t->after_len - (size_t)(unique - token - 6) - 10;
		t->after_len = (size_t)(unique - token - 6);
		t->after_unique = strndup(unique + 10, t->after_unique_len);
		if (!t->after_unique) die("out of memory");
	}
	t->before_id = strndup(line, t->before_len);
	t->after_id = strndup(token + 6, t->after_len);
	t->write = calls_a_write(line, len);
	if (!t->before_id || !t->after_id) die("out of memory");
	/* 20 digits of id, 20 of the unique number and the newline */
	size_t full = t->before_len + t->after_len + t->after_unique_len + 41;
	if (full > longest_request) longest_request = full;
}

static void load_templates(const char *path)
{
	FILE *file = fopen(path, "r");
	if (!file) {
		fprintf(stderr, "rpcload: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, file)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
		if (len == 0 || line[0] == '#') continue;
		add_template(line, (size_t)len);
	}
	free(line);
	fclose(file);
	if (template_count == 0) {
		fprintf(stderr, "rpcload: %s holds no request line\n", path);
		exit(2);
	}
}

/* ---- responses ---------------------------------------------------------------------------- */

struct reply_shape {
	bool has_id, has_result, has_error;
	uint64_t id;
};

/* What the generator needs from one response line: "id" (a non-negative integer), "result", "error". */
static struct reply_shape read_reply_shape(const char *line, const char *end)
{
	struct reply_shape shape = { 0 };
	struct top_level_walk walk = top_level_walk(line, end);
	struct top_level_member member;
	while (next_top_level_member(&walk, &member)) {
		if (top_level_member_is(&member, "id")) {
			const char *q = member.value;
			if (q < end && *q >= '0' && *q <= '9') {
				uint64_t value = 0;
				while (q < end && *q >= '0' && *q <= '9') value = value * 10 + (uint64_t)(*q++ - '0');
				shape.has_id = true;
				shape.id = value;
			}
		} else if (top_level_member_is(&member, "result")) {
			shape.has_result = true;
		} else if (top_level_member_is(&member, "error")) {
			shape.has_error = true;
		}
	}
	return shape;
}

static void show_first_error(const char *why, const char *line, size_t len)
{
	if (tally.reported_first_error) return;
	tally.reported_first_error = true;
	fprintf(stderr, "rpcload: first bad response (%s): %.*s%s\n", why, (int)(len > 400 ? 400 : len), line,
	        len > 400 ? "..." : "");
}

static void record_latency(struct latencies *l, uint64_t ns)
{
	if (l->count == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 65536;
		l->ns = realloc(l->ns, l->cap * sizeof *l->ns);
		if (!l->ns) die("out of memory");
	}
	l->ns[l->count++] = ns;
}

static bool in_measured_window(uint64_t now)
{
	return opt.once || (now >= measure_from_ns && now < measure_until_ns);
}

static void handle_response(struct connection *c, const char *line, size_t len, uint64_t now)
{
	struct reply_shape shape = read_reply_shape(line, line + len);
	struct slot *slot = NULL;
	last_response_ns = now;
	if (shape.has_id) {
		struct slot *candidate = &c->slots[shape.id & (MAX_DEPTH - 1)];
		if ((shape.id & (MAX_DEPTH - 1)) < (uint64_t)opt.depth && candidate->busy &&
		    candidate->serial == shape.id >> SLOT_BITS)
			slot = candidate;
	}
	if (!slot) {
		/* A response to nothing we asked: the protocol is broken, count it whenever it comes. */
		tally.unmatched++;
		show_first_error("no request has this id", line, len);
		return;
	}
	slot->busy = false;
	c->free_slots[c->free_count++] = (uint32_t)(slot - c->slots);
	if (!in_measured_window(now)) return;

	tally.responses++;
	record_latency(&tally.all, now - slot->sent_ns);
	record_latency(slot->write ? &tally.writes : &tally.reads, now - slot->sent_ns);
	if (shape.has_error) {
		tally.error_member++;
		show_first_error("error member", line, len);
	} else if (!shape.has_result) {
		tally.no_result++;
		show_first_error("no result member", line, len);
	} else if (opt.expect && !memmem(line, len, opt.expect, strlen(opt.expect))) {
		tally.expect_missing++;
		show_first_error("--expect text missing", line, len);
	} else {
		tally.ok++;
	}
}

/* ---- connections -------------------------------------------------------------------------- */

static int epoll_fd;

static void watch(struct connection *c, bool want_output)
{
	if (c->waiting_for_output == want_output) return;
	struct epoll_event ev = { .events = EPOLLIN | (want_output ? EPOLLOUT : 0), .data.ptr = c };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
	c->waiting_for_output = want_output;
}

static void close_connection(struct connection *c)
{
	if (c->closed) return;
	c->closed = true;
	tally.closed++;
	epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
}

static void flush_output(struct connection *c)
{
	while (c->out_sent < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR) continue;
			if (errno == EAGAIN) {
				watch(c, true);
				return;
			}
			close_connection(c);
			return;
		}
		c->out_sent += (size_t)n;
	}
	c->out_len = c->out_sent = 0;
	watch(c, false);
}

static char *append_decimal(char *p, uint64_t value)
{
	char digits[20];
	int n = 0;
	do {
		digits[n++] = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	while (n) *p++ = digits[--n];
	return p;
}

static bool may_send(uint64_t now)
{
	if (opt.once) return once_next < template_count;
	return now < measure_until_ns;
}

/* Puts a request into every free slot, then writes them all with one send. */
static void send_requests(struct connection *c, uint64_t now)
{
	if (c->closed) return;
	if (c->out_sent > 0) { /* keep the unsent tail at the front */
		memmove(c->out, c->out + c->out_sent, c->out_len - c->out_sent);
		c->out_len -= c->out_sent;
		c->out_sent = 0;
	}
	while (c->free_count > 0 && may_send(now)) {
		uint64_t which = opt.once ? once_next++ : c->next_template++ % template_count;
		const struct request_template *t = &templates[which];
		uint32_t index = c->free_slots[--c->free_count];
		uint64_t serial = c->serial++;
		char *p = c->out + c->out_len;
		memcpy(p, t->before_id, t->before_len);
		p = append_decimal(p + t->before_len, serial << SLOT_BITS | index);
		memcpy(p, t->after_id, t->after_len);
		p += t->after_len;
		if (t->after_unique) {
			p = append_decimal(p, requests_sent);
			memcpy(p, t->after_unique, t->after_unique_len);
			p += t->after_unique_len;
		}
		requests_sent++;
		*p++ = '\n';
		c->out_len = (size_t)(p - c->out);
		c->slots[index] = (struct slot){ .serial = serial, .sent_ns = now, .busy = true, .write = t->write };
	}
	flush_output(c);
}

static void receive(struct connection *c)
{
	if (c->in_cap - c->in_len < READ_CHUNK) {
		if (c->in_cap >= MAX_LINE) {
			fprintf(stderr, "rpcload: a response line is longer than %d bytes\n", MAX_LINE);
			close_connection(c);
			return;
		}
		c->in_cap *= 2;
		c->in = realloc(c->in, c->in_cap);
		if (!c->in) die("out of memory");
	}
	ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
		close_connection(c);
		return;
	}
	uint64_t now = monotonic_ns();
	c->in_len += (size_t)n;
	char *line = c->in, *end = c->in + c->in_len, *newline;
	while ((newline = memchr(line, '\n', (size_t)(end - line)))) {
		size_t len = (size_t)(newline - line);
		if (len > 0) handle_response(c, line, len, now);
		line = newline + 1;
	}
	c->in_len = (size_t)(end - line);
	memmove(c->in, line, c->in_len);
	send_requests(c, now);
}

static int connect_socket(const char *path)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof address.sun_path) {
		fprintf(stderr, "rpcload: socket path too long: %s\n", path);
		exit(2);
	}
	strcpy(address.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) die("socket");
	/* A server that never accepts would block connect() for good once its backlog is full. */
	struct timeval limit = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
	if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
		fprintf(stderr, "rpcload: connect %s: %s\n", path, strerror(errno));
		exit(3);
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
	return fd;
}

static struct connection *open_connection(int index)
{
	struct connection *c = checked_alloc(sizeof *c);
	c->fd = connect_socket(opt.socket_path);
	c->next_template = (uint64_t)index;
	c->slots = checked_alloc((size_t)opt.depth * sizeof *c->slots);
	c->free_slots = checked_alloc((size_t)opt.depth * sizeof *c->free_slots);
	for (int s = opt.depth - 1; s >= 0; s--) c->free_slots[c->free_count++] = (uint32_t)s;
	c->in_cap = 2 * READ_CHUNK;
	c->in = checked_alloc(c->in_cap);
	c->out_cap = longest_request * (size_t)opt.depth;
	c->out = checked_alloc(c->out_cap);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
	return c;
}

/* ---- report ------------------------------------------------------------------------------- */

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted latencies, in microseconds. */
static double percentile_us(const struct latencies *l, double p)
{
	if (l->count == 0) return 0;
	size_t rank = (size_t)((p / 100.0) * (double)l->count + 0.999999);
	if (rank < 1) rank = 1;
	if (rank > l->count) rank = l->count;
	return (double)l->ns[rank - 1] / 1000.0;
}

static void sort_latencies(struct latencies *l)
{
	qsort(l->ns, l->count, sizeof *l->ns, compare_u64);
}

static double max_us(const struct latencies *l)
{
	return l->count ? (double)l->ns[l->count - 1] / 1000.0 : 0;
}

static void print_latencies_json(const char *name, const struct latencies *l)
{
	printf("\"%s\":{\"count\":%zu,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}", name,
	       l->count, percentile_us(l, 50), percentile_us(l, 90), percentile_us(l, 99), percentile_us(l, 99.9),
	       max_us(l));
}

static void print_latencies_text(const char *name, const struct latencies *l)
{
	printf("  %-10s  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f (%zu responses)\n", name,
	       percentile_us(l, 50), percentile_us(l, 90), percentile_us(l, 99), percentile_us(l, 99.9), max_us(l),
	       l->count);
}

static double cpu_seconds(void)
{
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
	       (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: rpcload --socket PATH --templates FILE [options]\n"
	        "  -c, --connections N   connections (default 1)\n"
	        "  -d, --depth D         requests in flight on each connection, at most %u (default 1)\n"
	        "  -t, --seconds S       measured seconds (default 2)\n"
	        "  -w, --warmup S        unmeasured seconds before them (default 0.5)\n"
	        "      --once            send every template line once, wait for every answer, stop\n"
	        "  -e, --expect TEXT     a response without TEXT counts as an error\n"
	        "      --writes M[,M]    lines calling these methods are writes: latency of reads and writes apart\n"
	        "      --timeout S       give up when nothing was answered for S seconds (default 5)\n"
	        "      --json            one JSON object on stdout instead of text\n",
	        MAX_DEPTH);
	exit(2);
}

static void parse_options(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "socket", required_argument, 0, 's' },  { "templates", required_argument, 0, 'f' },
		{ "connections", required_argument, 0, 'c' }, { "depth", required_argument, 0, 'd' },
		{ "seconds", required_argument, 0, 't' }, { "warmup", required_argument, 0, 'w' },
		{ "once", no_argument, 0, 'o' },          { "expect", required_argument, 0, 'e' },
		{ "timeout", required_argument, 0, 'T' }, { "json", no_argument, 0, 'j' },
		{ "writes", required_argument, 0, 'W' },
		{ "help", no_argument, 0, 'h' },          { 0, 0, 0, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "s:f:c:d:t:w:e:h", longs, NULL)) != -1) {
		switch (o) {
		case 's': opt.socket_path = optarg; break;
		case 'f': opt.template_path = optarg; break;
		case 'c': opt.connections = atoi(optarg); break;
		case 'd': opt.depth = atoi(optarg); break;
		case 't': opt.seconds = atof(optarg); break;
		case 'w': opt.warmup = atof(optarg); break;
		case 'o': opt.once = true; break;
		case 'e': opt.expect = optarg; break;
		case 'T': opt.timeout = atof(optarg); break;
		case 'j': opt.json = true; break;
		case 'W': opt.writes = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || !opt.socket_path || !opt.template_path || opt.connections < 1 || opt.depth < 1 ||
	    opt.depth > (int)MAX_DEPTH || opt.seconds <= 0 || opt.warmup < 0 || opt.timeout <= 0)
		usage();
}

int main(int argc, char **argv)
{
	parse_options(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	load_templates(opt.template_path);
	/* {{unique}} counts from the wall clock's microseconds: no later run repeats a value of this one. */
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	requests_sent = (uint64_t)wall.tv_sec * 1000000u + (uint64_t)wall.tv_nsec / 1000u;
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0) die("epoll_create1");

	/* Every connection is open before the clock starts. */
	struct connection **links = checked_alloc((size_t)opt.connections * sizeof *links);
	for (int i = 0; i < opt.connections; i++) links[i] = open_connection(i);

	uint64_t start = monotonic_ns();
	measure_from_ns = opt.once ? start : start + (uint64_t)(opt.warmup * 1e9);
	measure_until_ns = opt.once ? UINT64_MAX : measure_from_ns + (uint64_t)(opt.seconds * 1e9);
	uint64_t timeout_ns = (uint64_t)(opt.timeout * 1e9);
	last_response_ns = start;
	for (int i = 0; i < opt.connections; i++) send_requests(links[i], start);

	double cpu_at_start = cpu_seconds();
	double cpu_at_measure = opt.once ? cpu_at_start : -1;
	struct epoll_event events[256];
	for (;;) {
		uint64_t now = monotonic_ns();
		if (cpu_at_measure < 0 && now >= measure_from_ns) cpu_at_measure = cpu_seconds();
		bool open = false, in_flight = false;
		for (int i = 0; i < opt.connections; i++) {
			if (links[i]->closed) continue;
			open = true;
			if (links[i]->free_count < (uint32_t)opt.depth) in_flight = true;
		}
		if (!open) break;
		if (!opt.once && now >= measure_until_ns) break;
		if (opt.once && !in_flight && once_next >= template_count) break;
		if (in_flight && now - last_response_ns > timeout_ns) break;
		uint64_t wake = opt.once ? last_response_ns + timeout_ns : measure_until_ns;
		if (cpu_at_measure < 0 && measure_from_ns < wake) wake = measure_from_ns;
		int wait_ms = wake > now ? (int)((wake - now) / 1000000) + 1 : 0;
		if (wait_ms > 100) wait_ms = 100;
		int n = epoll_wait(epoll_fd, events, 256, wait_ms);
		if (n < 0 && errno != EINTR) die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct connection *c = events[i].data.ptr;
			if (c->closed) continue;
			if (events[i].events & EPOLLOUT) flush_output(c);
			if (!c->closed && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) receive(c);
		}
	}
	uint64_t stop = monotonic_ns();
	double cpu_at_stop = cpu_seconds();
	if (cpu_at_measure < 0) cpu_at_measure = cpu_at_stop;

	/* Requests still unanswered: a timeout when --once waited for them, or when they are old. */
	for (int i = 0; i < opt.connections; i++)
		for (int s = 0; s < opt.depth; s++) {
			struct slot *slot = &links[i]->slots[s];
			if (slot->busy && (opt.once || stop - slot->sent_ns > timeout_ns)) tally.timeouts++;
		}

	uint64_t window_end = opt.once ? stop : (stop < measure_until_ns ? stop : measure_until_ns);
	double window = window_end > measure_from_ns ? (double)(window_end - measure_from_ns) / 1e9 : 1e-9;
	sort_latencies(&tally.all);
	sort_latencies(&tally.reads);
	sort_latencies(&tally.writes);
	uint64_t errors = tally.error_member + tally.no_result + tally.expect_missing + tally.unmatched;
	double rps = (double)tally.responses / window;
	double cpu_percent = 100.0 * (cpu_at_stop - cpu_at_measure) / window;

	if (opt.json) {
		printf("{\"connections\":%d,\"depth\":%d,\"mode\":\"%s\",\"seconds\":%.3f,\"responses\":%llu,"
		       "\"ok\":%llu,\"errors\":%llu,\"error_member\":%llu,\"no_result\":%llu,\"expect_missing\":%llu,"
		       "\"unmatched\":%llu,\"timeouts\":%llu,\"closed\":%llu,\"rps\":%.1f,"
		       "\"latency_us\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},"
		       "\"cpu_percent\":%.1f,",
		       opt.connections, opt.depth, opt.once ? "once" : "duration", window,
		       (unsigned long long)tally.responses, (unsigned long long)tally.ok, (unsigned long long)errors,
		       (unsigned long long)tally.error_member, (unsigned long long)tally.no_result,
		       (unsigned long long)tally.expect_missing, (unsigned long long)tally.unmatched,
		       (unsigned long long)tally.timeouts, (unsigned long long)tally.closed, rps,
		       percentile_us(&tally.all, 50), percentile_us(&tally.all, 90), percentile_us(&tally.all, 99),
		       percentile_us(&tally.all, 99.9), max_us(&tally.all), cpu_percent);
		print_latencies_json("reads_latency_us", &tally.reads);
		printf(",");
		print_latencies_json("writes_latency_us", &tally.writes);
		printf("}\n");
	} else {
		printf("rpcload %s: %d connection(s) x %d in flight, %.2f s measured\n", opt.socket_path,
		       opt.connections, opt.depth, window);
		printf("  throughput  %.0f responses/s (%llu responses, %llu ok)\n", rps,
		       (unsigned long long)tally.responses, (unsigned long long)tally.ok);
		print_latencies_text("latency us", &tally.all);
		if (opt.writes) {
			print_latencies_text("reads", &tally.reads);
			print_latencies_text("writes", &tally.writes);
		}
		printf("  problems    %llu error(s), %llu unmatched, %llu timeout(s), %llu closed connection(s)\n",
		       (unsigned long long)errors, (unsigned long long)tally.unmatched, (unsigned long long)tally.timeouts,
		       (unsigned long long)tally.closed);
		printf("  generator   %.0f%% of one CPU\n", cpu_percent);
	}
	if (tally.closed) {
		fprintf(stderr, "rpcload: the server closed %llu connection(s)\n", (unsigned long long)tally.closed);
		return 3;
	}
	if (tally.responses == 0) fprintf(stderr, "rpcload: no response in the measured window\n");
	if (tally.timeouts) fprintf(stderr, "rpcload: %llu request(s) unanswered\n", (unsigned long long)tally.timeouts);
	return (errors || tally.timeouts || tally.responses == 0) ? 1 : 0;
}
