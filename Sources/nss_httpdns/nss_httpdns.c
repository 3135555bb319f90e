/* The NSS entry points: an answer from the daemon's hosts map when it holds one (map_lookup.c), else
 * a request to the daemon, its reply read into the caller's buffer, and the answer laid out in the
 * rest of that buffer. Nothing is allocated; the only state kept between calls is the read-only
 * mapping of the hosts map, which threads share without a lock and fork() keeps. The conventions
 * (errnop, h_errnop, buffer layout) are those of glibc's nss_files and nss_dns. */
#include "nss_httpdns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "daemon_call.h"
#include "json.h"
#include "map_lookup.h"

/* Error codes of the wire contract. */
enum {
    RPC_INVALID_PARAMS = -32602,
    RPC_HOST_NOT_FOUND = -32001,
    RPC_RESOLUTION_UNAVAILABLE = -32002,
    RPC_LIMIT_EXCEEDED = -32003,
};

/* Longer names are not sent: DNS names have at most 253 octets, this leaves room for UTF-8
   before IDNA, and it bounds the request. */
enum { NAME_MAX_BYTES = 1024 };

/* A request: the envelope plus the name, every byte of which may need a backslash. */
enum { REQUEST_CAPACITY = 128 + 2 * NAME_MAX_BYTES };

/* One request per connection, so one id (text for the request, number for the reply). */
#define REQUEST_ID "1"
enum { REPLY_ID = 1 };

/* How a lookup ended: the status, *errnop (0: left alone) and *h_errnop. */
struct outcome {
    enum nss_status status;
    int errnum;
    int herrnum;
};

static const struct outcome success = {NSS_STATUS_SUCCESS, 0, NETDB_SUCCESS};
static const struct outcome not_found = {NSS_STATUS_NOTFOUND, 0, HOST_NOT_FOUND};
/* The name is known but has no address of the family asked for. */
static const struct outcome no_data = {NSS_STATUS_NOTFOUND, 0, NO_DATA};
static const struct outcome try_again = {NSS_STATUS_TRYAGAIN, EAGAIN, TRY_AGAIN};
/* The daemon refuses for now (too many connections): another user may be flooding it, so the next
   source answers instead of every lookup on the machine failing. */
static const struct outcome busy = {NSS_STATUS_UNAVAIL, EBUSY, TRY_AGAIN};
/* glibc retries with a larger buffer exactly on TRYAGAIN + ERANGE + NETDB_INTERNAL. */
static const struct outcome buffer_too_small = {NSS_STATUS_TRYAGAIN, ERANGE, NETDB_INTERNAL};
/* An address the daemon never handed out to this user: its memory is no authority on addresses,
   so the next source (DNS PTR records after "[!UNAVAIL=return]") gets to answer. */
static const struct outcome unknown_address = {NSS_STATUS_UNAVAIL, 0, HOST_NOT_FOUND};
/* A name outside every Route= that only billed services would answer: the daemon leaves it to the
   machine's resolver, the next source. */
static const struct outcome not_routed = {NSS_STATUS_UNAVAIL, 0, HOST_NOT_FOUND};

/* The daemon is not there, not answering in time, or answering something unreadable: the next
   source in nsswitch.conf gets its turn ([!UNAVAIL=return] lets it). NO_RECOVERY rather than
   NETDB_INTERNAL, which getaddrinfo would turn into EAI_SYSTEM. */
static struct outcome unavailable(int errnum) { return (struct outcome){NSS_STATUS_UNAVAIL, errnum, NO_RECOVERY}; }

static bool succeeded(struct outcome outcome) { return outcome.status == NSS_STATUS_SUCCESS; }

/* Restores errno as the caller had it, then reports: glibc often passes &errno as errnop. */
static enum nss_status finish(struct outcome outcome, int saved_errno, int *errnop, int *h_errnop) {
    errno = saved_errno;
    if (outcome.errnum != 0) *errnop = outcome.errnum;
    *h_errnop = outcome.herrnum;
    return outcome.status;
}

/* --- the caller's buffer ------------------------------------------------------------------- */

/* What is left of the caller's buffer; every result is carved from it. */
struct arena {
    char *cursor;
    char *end;
};

/* size bytes aligned to align, or NULL when they do not fit. */
static void *arena_take(struct arena *arena, size_t size, size_t align) {
    size_t pad = (align - (uintptr_t)arena->cursor % align) % align;
    size_t left = (size_t)(arena->end - arena->cursor);
    if (pad > left || size > left - pad) return NULL;
    char *start = arena->cursor + pad;
    arena->cursor = start + size;
    return start;
}

/* A host name from the reply as a C string in the arena. NULL with *invalid false: no room;
   *invalid true: not a name a caller could print (empty, too long, control characters, NUL). */
static char *arena_name(struct arena *arena, const struct json_span *span, bool *invalid) {
    size_t length = json_span_decoded_length(span);
    *invalid = length == 0 || length > NAME_MAX_BYTES;
    if (*invalid) return NULL;
    char *name = arena_take(arena, length + 1, 1);
    if (name == NULL) return NULL;
    json_span_decode(span, name);
    name[length] = '\0';
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7F) {
            *invalid = true;
            return NULL;
        }
    }
    return name;
}

/* --- requests and replies ------------------------------------------------------------------ */

/* Appends a NUL-terminated piece to out[0..REQUEST_CAPACITY); false when it does not fit. */
static bool append(char *out, size_t *length, const char *piece) {
    size_t piece_length = strlen(piece);
    if (piece_length > REQUEST_CAPACITY - *length) return false;
    memcpy(out + *length, piece, piece_length);
    *length += piece_length;
    return true;
}

/* How long a lookup of an expired answer waits for its refresh before the daemon serves the expired
   one (RFC 8767's client response timer): a program cannot retry another address when the stale
   one is dead, so a healthy upstream's new answer comes first; well under the 2.5 s deadline. */
#define STALE_AFTER_MS "500"

/* {"jsonrpc":"2.0","id":1,"method":METHOD,"params":{KEY:VALUE[,"family":FAMILY][EXTRA]}}\n into
   out; 0 when VALUE cannot be sent (see json_write_string). EXTRA is "" or starts with a comma. */
static size_t build_request(char *out, const char *method, const char *key, const char *value, const char *family,
                            const char *extra) {
    size_t value_length = strlen(value);
    if (value_length == 0 || value_length > NAME_MAX_BYTES) return 0;
    size_t length = 0;
    if (!append(out, &length, "{\"jsonrpc\":\"2.0\",\"id\":" REQUEST_ID ",\"method\":\"") ||
        !append(out, &length, method) || !append(out, &length, "\",\"params\":{\"") || !append(out, &length, key) ||
        !append(out, &length, "\":"))
        return 0;
    size_t written = json_write_string(value, value_length, out + length, REQUEST_CAPACITY - length);
    if (written == 0) return 0;
    length += written;
    if (family != NULL && (!append(out, &length, ",\"family\":\"") || !append(out, &length, family) ||
                           !append(out, &length, "\"")))
        return 0;
    if (!append(out, &length, extra)) return 0;
    return append(out, &length, "}}\n") ? length : 0;
}

/* An error reply's data.reason, where it changes the outcome: "no-data" (-32001 for a name that
   exists without an address of the families asked for, which nss_dns reports as NO_DATA) and
   "not-routed" (-32002 for a name outside every Route= whose upstreams are all billed services:
   the machine's own resolver, the next source, answers it). */
enum error_reason { REASON_OTHER, REASON_NO_DATA, REASON_NOT_ROUTED };

struct daemon_error {
    int64_t code;
    enum error_reason reason;
};

static struct outcome outcome_of_error(struct daemon_error error) {
    switch (error.code) {
    case RPC_HOST_NOT_FOUND:
        return error.reason == REASON_NO_DATA ? no_data : not_found;
    case RPC_INVALID_PARAMS: /* the daemon finds the name malformed: it names no host */
        return not_found;
    case RPC_RESOLUTION_UNAVAILABLE:
        return error.reason == REASON_NOT_ROUTED ? not_routed : try_again;
    case RPC_LIMIT_EXCEEDED:
        return busy;
    default: /* internal error, permission denied, a daemon without the method */
        return unavailable(EPROTO);
    }
}

/* An error's data: its "reason" where it is one of `enum error_reason`'s. Other members are skipped,
   a repeated or non-string reason refused; data that is no object is skipped whole (only the code
   matters then). */
static int read_error_data(struct json_reader *reader, enum error_reason *said) {
    struct json_reader object = *reader;
    if (json_object_begin(&object) != 0) return json_skip_value(reader);
    *reader = object;
    bool seen_reason = false;
    struct json_iterator members = {0};
    struct json_span key;
    int more;
    while ((more = json_object_next(reader, &members, &key)) == 1) {
        if (json_span_equals(&key, "reason")) {
            struct json_span reason;
            if (seen_reason || json_read_string(reader, &reason) != 0) return -1;
            *said = json_span_equals(&reason, "no-data")      ? REASON_NO_DATA
                    : json_span_equals(&reason, "not-routed") ? REASON_NOT_ROUTED
                                                              : REASON_OTHER;
            seen_reason = true;
        } else if (json_skip_value(reader) != 0) {
            return -1;
        }
    }
    return more;
}

/* Reads {"jsonrpc":"2.0","id":1,"result":R} or {"jsonrpc":"2.0","id":1,"error":{"code":N,...}}:
   the reader at R, or the error. An error may have "id":null (the daemon refusing the connection
   before it read the request, which on this connection can only be ours). Unknown members are
   skipped, repeated ones refused. */
static int read_envelope(const char *line, size_t length, struct json_reader *result, bool *is_error,
                         struct daemon_error *error) {
    struct json_reader reader;
    json_reader_init(&reader, line, length);
    bool seen_version = false, seen_id = false, null_id = false, seen_result = false, seen_error = false;
    struct json_iterator members = {0};
    struct json_span key;
    int more;
    if (json_object_begin(&reader) != 0) return -1;
    while ((more = json_object_next(&reader, &members, &key)) == 1) {
        if (json_span_equals(&key, "jsonrpc")) {
            struct json_span version;
            if (seen_version || json_read_string(&reader, &version) != 0 || !json_span_equals(&version, "2.0"))
                return -1;
            seen_version = true;
        } else if (json_span_equals(&key, "id")) {
            int64_t id;
            if (seen_id) return -1;
            null_id = json_read_null(&reader) == 0;
            if (!null_id && (json_read_integer(&reader, &id) != 0 || id != REPLY_ID)) return -1;
            seen_id = true;
        } else if (json_span_equals(&key, "result")) {
            if (seen_result) return -1;
            *result = reader;
            if (json_skip_value(&reader) != 0) return -1;
            seen_result = true;
        } else if (json_span_equals(&key, "error")) {
            if (seen_error || json_object_begin(&reader) != 0) return -1;
            bool seen_code = false, seen_data = false;
            struct json_iterator fields = {0};
            struct json_span field;
            int more_fields;
            while ((more_fields = json_object_next(&reader, &fields, &field)) == 1) {
                if (json_span_equals(&field, "code")) {
                    if (seen_code || json_read_integer(&reader, &error->code) != 0) return -1;
                    seen_code = true;
                } else if (json_span_equals(&field, "data")) {
                    if (seen_data || read_error_data(&reader, &error->reason) != 0) return -1;
                    seen_data = true;
                } else if (json_skip_value(&reader) != 0) {
                    return -1;
                }
            }
            if (more_fields != 0 || !seen_code) return -1;
            seen_error = true;
        } else if (json_skip_value(&reader) != 0) {
            return -1;
        }
    }
    if (more != 0 || json_expect_end(&reader) != 0) return -1;
    if (!seen_version || !seen_id || seen_result == seen_error || (null_id && seen_result)) return -1;
    *is_error = seen_error;
    return 0;
}

/* Sends the request and reads the reply into the caller's buffer; on success the reader is at the
   result and the arena holds the rest of the buffer. */
static struct outcome call_daemon(const char *request, size_t request_length, char *buffer, size_t buflen,
                                  struct json_reader *result, struct arena *rest) {
    size_t reply_length;
    int rc = buffer == NULL ? -ERANGE : daemon_call(request, request_length, buffer, buflen, &reply_length);
    if (rc == -ERANGE) return buffer_too_small;
    if (rc != 0) return unavailable(-rc);
    /* The reply stays where it is (the spans point into it); the answer goes after its newline. */
    rest->cursor = buffer + reply_length + 1;
    rest->end = buffer + buflen;
    bool is_error = false;
    struct daemon_error error = {0, false};
    if (read_envelope(buffer, reply_length, result, &is_error, &error) != 0) return unavailable(EBADMSG);
    return is_error ? outcome_of_error(error) : success;
}

/* An array of address literals of one family, checked once and read again when laid out. */
struct address_list {
    struct json_reader array;
    size_t count;
};

/* An address literal of af into out (4 or 16 bytes); -1 for anything else. */
static int parse_address(const struct json_span *text, int af, void *out) {
    char literal[INET6_ADDRSTRLEN];
    if (text->escaped || text->length >= sizeof literal) return -1;
    memcpy(literal, text->start, text->length);
    literal[text->length] = '\0';
    return inet_pton(af, literal, out) == 1 ? 0 : -1;
}

static int read_address_list(struct json_reader *reader, int af, struct address_list *list) {
    list->array = *reader;
    list->count = 0;
    if (json_array_begin(reader) != 0) return -1;
    struct json_iterator elements = {0};
    int more;
    while ((more = json_array_next(reader, &elements)) == 1) {
        struct json_span text;
        unsigned char address[16];
        if (json_read_string(reader, &text) != 0 || parse_address(&text, af, address) != 0) return -1;
        list->count++;
    }
    return more;
}

/* Walks a list that read_address_list accepted. */
struct address_cursor {
    struct json_reader reader;
    struct json_iterator elements;
};

static void address_cursor_init(struct address_cursor *cursor, const struct address_list *list) {
    cursor->reader = list->array;
    cursor->elements = (struct json_iterator){0};
    json_array_begin(&cursor->reader);
}

static void address_cursor_next(struct address_cursor *cursor, int af, void *out) {
    struct json_span text;
    json_array_next(&cursor->reader, &cursor->elements);
    json_read_string(&cursor->reader, &text);
    parse_address(&text, af, out);
}

/* The TTL as glibc takes it. */
static int32_t clamp_ttl(int64_t ttl) { return ttl > INT32_MAX ? INT32_MAX : (int32_t)ttl; }

/* --- answers from the hosts map ----------------------------------------------------------- */

/* Seconds left from now_ns until expires_ns, rounded up as the daemon's ttl is. */
static int32_t seconds_until(int64_t expires_ns, int64_t now_ns) {
    int64_t left = expires_ns - now_ns;
    return clamp_ttl(left <= 0 ? 0 : (left + 999999999) / 1000000000);
}

/* The map's answer for both families, laid out as lookup_tuples lays out the daemon's; false when
   the map does not hold both (the socket answers). */
static bool map_tuples(const char *name, struct gaih_addrtuple **pat, char *buffer, size_t buflen, int32_t *ttlp,
                       struct outcome *outcome) {
    struct hosts_map_answer v4, v6;
    /* One uid and one instant for both families. */
    uint32_t uid = (uint32_t)geteuid();
    int64_t now = map_now_ns();
    if (!map_lookup(name, HOSTS_MAP_IPV4, uid, now, &v4) || !map_lookup(name, HOSTS_MAP_IPV6, uid, now, &v6))
        return false;
    size_t count = v4.count + v6.count;
    if (count == 0) {
        *outcome = no_data;
        return true;
    }
    *outcome = buffer_too_small;
    if (buffer == NULL) return true;
    struct arena arena = {buffer, buffer + buflen};
    size_t name_length = strlen(name);
    char *canonical = arena_take(&arena, name_length + 1, 1);
    struct gaih_addrtuple *tuples =
        arena_take(&arena, count * sizeof(struct gaih_addrtuple), alignof(struct gaih_addrtuple));
    if (canonical == NULL || tuples == NULL) return true;
    memcpy(canonical, name, name_length + 1);
    for (size_t index = 0; index < count; index++) {
        bool ipv4 = index < v4.count;
        memset(&tuples[index], 0, sizeof tuples[index]);
        tuples[index].family = ipv4 ? AF_INET : AF_INET6;
        memcpy(tuples[index].addr, ipv4 ? v4.addresses[index] : v6.addresses[index - v4.count], ipv4 ? 4 : 16);
        tuples[index].name = canonical;
        tuples[index].next = index + 1 < count ? &tuples[index + 1] : NULL;
    }
    if (*pat != NULL) {
        **pat = tuples[0];
    } else {
        *pat = tuples;
    }
    /* The smaller TTL of the families with addresses, as the daemon's ttl. */
    int64_t expires = v4.count == 0 ? v6.expires_ns
                      : v6.count == 0 ? v4.expires_ns
                      : (v4.expires_ns < v6.expires_ns ? v4.expires_ns : v6.expires_ns);
    if (ttlp != NULL) *ttlp = seconds_until(expires, now);
    *outcome = success;
    return true;
}

/* The map's answer for one family (AF_INET or AF_INET6) as a hostent; false: the socket answers. */
static bool map_hostent(const char *name, int af, struct hostent *host, char *buffer, size_t buflen, int32_t *ttlp,
                        char **canonp, struct outcome *outcome) {
    struct hosts_map_answer answer;
    int64_t now = map_now_ns();
    if (!map_lookup(name, af == AF_INET ? HOSTS_MAP_IPV4 : HOSTS_MAP_IPV6, (uint32_t)geteuid(), now, &answer))
        return false;
    if (answer.count == 0) {
        *outcome = no_data;
        return true;
    }
    *outcome = buffer_too_small;
    if (buffer == NULL) return true;
    struct arena arena = {buffer, buffer + buflen};
    size_t length = af == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);
    size_t name_length = strlen(name);
    char **aliases = arena_take(&arena, sizeof(char *), alignof(char *));
    char **addresses = arena_take(&arena, (answer.count + 1) * sizeof(char *), alignof(char *));
    char *bytes = arena_take(&arena, answer.count * length, alignof(struct in6_addr));
    char *canonical = arena_take(&arena, name_length + 1, 1);
    if (aliases == NULL || addresses == NULL || bytes == NULL || canonical == NULL) return true;
    memcpy(canonical, name, name_length + 1);
    aliases[0] = NULL;
    for (size_t i = 0; i < answer.count; i++) {
        addresses[i] = bytes + i * length;
        memcpy(addresses[i], answer.addresses[i], length);
    }
    addresses[answer.count] = NULL;
    host->h_name = canonical;
    host->h_aliases = aliases;
    host->h_addrtype = af;
    host->h_length = (int)length;
    host->h_addr_list = addresses;
    if (ttlp != NULL) *ttlp = seconds_until(answer.expires_ns, now);
    if (canonp != NULL) *canonp = canonical;
    *outcome = success;
    return true;
}

/* --- forward lookups ----------------------------------------------------------------------- */

/* The result of resolve: {"host":H,"ipv4":[...],"ipv6":[...],"ttl":N,...}, and the caller's key
   to the hosts map when the daemon has one ("hostsMapKey", 32 hex digits). */
struct resolve_answer {
    struct json_span host;
    struct address_list ipv4;
    struct address_list ipv6;
    int64_t ttl;
    bool has_map_key;
    unsigned char map_key[HOSTS_MAP_KEY_BYTES];
};

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* 32 lowercase hex digits into key; -1 for anything else. */
static int read_map_key(const struct json_span *text, unsigned char key[HOSTS_MAP_KEY_BYTES]) {
    if (text->escaped || text->length != 2 * HOSTS_MAP_KEY_BYTES) return -1;
    for (size_t i = 0; i < HOSTS_MAP_KEY_BYTES; i++) {
        int high = hex_digit(text->start[2 * i]), low = hex_digit(text->start[2 * i + 1]);
        if (high < 0 || low < 0) return -1;
        key[i] = (unsigned char)(high << 4 | low);
    }
    return 0;
}

static int read_resolve_answer(struct json_reader *reader, struct resolve_answer *answer) {
    bool seen_host = false, seen_ipv4 = false, seen_ipv6 = false, seen_ttl = false;
    struct json_iterator members = {0};
    struct json_span key;
    int more;
    answer->has_map_key = false;
    if (json_object_begin(reader) != 0) return -1;
    while ((more = json_object_next(reader, &members, &key)) == 1) {
        if (json_span_equals(&key, "host")) {
            if (seen_host || json_read_string(reader, &answer->host) != 0) return -1;
            seen_host = true;
        } else if (json_span_equals(&key, "hostsMapKey")) {
            struct json_span text;
            if (answer->has_map_key || json_read_string(reader, &text) != 0 ||
                read_map_key(&text, answer->map_key) != 0)
                return -1;
            answer->has_map_key = true;
        } else if (json_span_equals(&key, "ipv4")) {
            if (seen_ipv4 || read_address_list(reader, AF_INET, &answer->ipv4) != 0) return -1;
            seen_ipv4 = true;
        } else if (json_span_equals(&key, "ipv6")) {
            if (seen_ipv6 || read_address_list(reader, AF_INET6, &answer->ipv6) != 0) return -1;
            seen_ipv6 = true;
        } else if (json_span_equals(&key, "ttl")) {
            if (seen_ttl || json_read_integer(reader, &answer->ttl) != 0 || answer->ttl < 0) return -1;
            seen_ttl = true;
        } else if (json_skip_value(reader) != 0) {
            return -1;
        }
    }
    return more == 0 && seen_host && seen_ipv4 && seen_ipv6 && seen_ttl ? 0 : -1;
}

/* Asks the daemon for name's addresses (family "ipv4", "ipv6", or NULL for both). */
static struct outcome resolve(const char *name, const char *family, char *buffer, size_t buflen,
                              struct resolve_answer *answer, struct arena *rest) {
    char request[REQUEST_CAPACITY];
    size_t request_length =
        build_request(request, "resolve", "host", name, family,
                      ",\"staleAfterMs\":" STALE_AFTER_MS ",\"billedRoutesOnly\":true,\"hostsMap\":true");
    /* Empty, overlong, control characters, invalid UTF-8: no host has such a name. */
    if (request_length == 0) return not_found;
    /* A single-label name is for the search list of resolv.conf, which only nss_dns applies;
       HTTPDNS answers fully qualified names. Step aside so "[!UNAVAIL=return] dns" completes it. */
    if (strchr(name, '.') == NULL) return (struct outcome){NSS_STATUS_UNAVAIL, 0, HOST_NOT_FOUND};
    struct json_reader result;
    struct outcome outcome = call_daemon(request, request_length, buffer, buflen, &result, rest);
    if (!succeeded(outcome)) return outcome;
    if (read_resolve_answer(&result, answer) != 0) return unavailable(EBADMSG);
    /* The daemon answered this effective uid (SO_PEERCRED): its key is for this uid. */
    if (answer->has_map_key) map_remember_key((uint32_t)geteuid(), answer->map_key);
    return success;
}

static struct outcome lookup_tuples(const char *name, struct gaih_addrtuple **pat, char *buffer, size_t buflen,
                                    int32_t *ttlp) {
    struct outcome from_map;
    if (map_tuples(name, pat, buffer, buflen, ttlp, &from_map)) return from_map;
    struct resolve_answer answer;
    struct arena arena;
    struct outcome outcome = resolve(name, NULL, buffer, buflen, &answer, &arena);
    if (!succeeded(outcome)) return outcome;
    size_t count = answer.ipv4.count + answer.ipv6.count;
    if (count == 0) return no_data;

    bool invalid;
    char *canonical = arena_name(&arena, &answer.host, &invalid);
    if (canonical == NULL) return invalid ? unavailable(EBADMSG) : buffer_too_small;
    struct gaih_addrtuple *tuples =
        arena_take(&arena, count * sizeof(struct gaih_addrtuple), alignof(struct gaih_addrtuple));
    if (tuples == NULL) return buffer_too_small;

    /* IPv4 first, as nss_dns answers A before AAAA; getaddrinfo sorts them afterwards (RFC 6724). */
    struct address_cursor cursor;
    size_t index = 0;
    address_cursor_init(&cursor, &answer.ipv4);
    for (size_t i = 0; i < answer.ipv4.count; i++, index++) {
        memset(&tuples[index], 0, sizeof tuples[index]);
        tuples[index].family = AF_INET;
        address_cursor_next(&cursor, AF_INET, tuples[index].addr);
    }
    address_cursor_init(&cursor, &answer.ipv6);
    for (size_t i = 0; i < answer.ipv6.count; i++, index++) {
        memset(&tuples[index], 0, sizeof tuples[index]);
        tuples[index].family = AF_INET6;
        address_cursor_next(&cursor, AF_INET6, tuples[index].addr);
    }
    for (index = 0; index < count; index++) {
        tuples[index].name = canonical;
        tuples[index].next = index + 1 < count ? &tuples[index + 1] : NULL;
    }
    /* A caller may hand in the first tuple (older getaddrinfo did); the rest stay in the buffer. */
    if (*pat != NULL) {
        **pat = tuples[0];
    } else {
        *pat = tuples;
    }
    if (ttlp != NULL) *ttlp = clamp_ttl(answer.ttl);
    return success;
}

static struct outcome lookup_hostent(const char *name, int af, struct hostent *host, char *buffer, size_t buflen,
                                     int32_t *ttlp, char **canonp) {
    /* AF_UNSPEC means IPv4 here, as in nss-resolve; anything else is not a host address family. */
    if (af == AF_UNSPEC) af = AF_INET;
    if (af != AF_INET && af != AF_INET6) return (struct outcome){NSS_STATUS_UNAVAIL, EAFNOSUPPORT, NO_DATA};
    struct outcome from_map;
    if (map_hostent(name, af, host, buffer, buflen, ttlp, canonp, &from_map)) return from_map;
    struct resolve_answer answer;
    struct arena arena;
    struct outcome outcome = resolve(name, af == AF_INET ? "ipv4" : "ipv6", buffer, buflen, &answer, &arena);
    if (!succeeded(outcome)) return outcome;
    const struct address_list *list = af == AF_INET ? &answer.ipv4 : &answer.ipv6;
    if (list->count == 0) return no_data;

    size_t length = af == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);
    char **aliases = arena_take(&arena, sizeof(char *), alignof(char *));
    char **addresses = arena_take(&arena, (list->count + 1) * sizeof(char *), alignof(char *));
    char *bytes = arena_take(&arena, list->count * length, alignof(struct in6_addr));
    if (aliases == NULL || addresses == NULL || bytes == NULL) return buffer_too_small;
    bool invalid;
    char *canonical = arena_name(&arena, &answer.host, &invalid);
    if (canonical == NULL) return invalid ? unavailable(EBADMSG) : buffer_too_small;

    aliases[0] = NULL;
    struct address_cursor cursor;
    address_cursor_init(&cursor, list);
    for (size_t i = 0; i < list->count; i++) {
        addresses[i] = bytes + i * length;
        address_cursor_next(&cursor, af, addresses[i]);
    }
    addresses[list->count] = NULL;
    host->h_name = canonical;
    host->h_aliases = aliases;
    host->h_addrtype = af;
    host->h_length = (int)length;
    host->h_addr_list = addresses;
    if (ttlp != NULL) *ttlp = clamp_ttl(answer.ttl);
    if (canonp != NULL) *canonp = canonical;
    return success;
}

enum nss_status _nss_httpdns_gethostbyname4_r(const char *name, struct gaih_addrtuple **pat, char *buffer,
                                              size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp) {
    int saved_errno = errno;
    return finish(lookup_tuples(name, pat, buffer, buflen, ttlp), saved_errno, errnop, h_errnop);
}

enum nss_status _nss_httpdns_gethostbyname3_r(const char *name, int af, struct hostent *host, char *buffer,
                                              size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp,
                                              char **canonp) {
    int saved_errno = errno;
    return finish(lookup_hostent(name, af, host, buffer, buflen, ttlp, canonp), saved_errno, errnop, h_errnop);
}

enum nss_status _nss_httpdns_gethostbyname2_r(const char *name, int af, struct hostent *host, char *buffer,
                                              size_t buflen, int *errnop, int *h_errnop) {
    return _nss_httpdns_gethostbyname3_r(name, af, host, buffer, buflen, errnop, h_errnop, NULL, NULL);
}

enum nss_status _nss_httpdns_gethostbyname_r(const char *name, struct hostent *host, char *buffer, size_t buflen,
                                             int *errnop, int *h_errnop) {
    return _nss_httpdns_gethostbyname3_r(name, AF_INET, host, buffer, buflen, errnop, h_errnop, NULL, NULL);
}

/* --- reverse lookups ----------------------------------------------------------------------- */

/* The result of reverse: {"address":A,"hosts":[...],"ttl":N}. */
struct reverse_answer {
    struct json_span address;
    struct json_reader hosts;
    size_t host_count;
    int64_t ttl;
};

static int read_reverse_answer(struct json_reader *reader, struct reverse_answer *answer) {
    bool seen_address = false, seen_hosts = false, seen_ttl = false;
    struct json_iterator members = {0};
    struct json_span key;
    int more;
    if (json_object_begin(reader) != 0) return -1;
    while ((more = json_object_next(reader, &members, &key)) == 1) {
        if (json_span_equals(&key, "address")) {
            if (seen_address || json_read_string(reader, &answer->address) != 0) return -1;
            seen_address = true;
        } else if (json_span_equals(&key, "hosts")) {
            if (seen_hosts) return -1;
            answer->hosts = *reader;
            answer->host_count = 0;
            if (json_array_begin(reader) != 0) return -1;
            struct json_iterator elements = {0};
            struct json_span host;
            int more_hosts;
            while ((more_hosts = json_array_next(reader, &elements)) == 1) {
                if (json_read_string(reader, &host) != 0) return -1;
                answer->host_count++;
            }
            if (more_hosts != 0) return -1;
            seen_hosts = true;
        } else if (json_span_equals(&key, "ttl")) {
            if (seen_ttl || json_read_integer(reader, &answer->ttl) != 0 || answer->ttl < 0) return -1;
            seen_ttl = true;
        } else if (json_skip_value(reader) != 0) {
            return -1;
        }
    }
    return more == 0 && seen_address && seen_hosts && seen_ttl ? 0 : -1;
}

static struct outcome lookup_address(const void *addr, socklen_t len, int af, struct hostent *host, char *buffer,
                                     size_t buflen, int32_t *ttlp) {
    static const unsigned char v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char v4_compatible_prefix[12] = {0};
    static const unsigned char loopback_suffix[4] = {0, 0, 0, 1};
    size_t length;
    if (af == AF_INET) {
        length = sizeof(struct in_addr);
    } else if (af == AF_INET6) {
        length = sizeof(struct in6_addr);
    } else {
        return (struct outcome){NSS_STATUS_UNAVAIL, EAFNOSUPPORT, NETDB_INTERNAL};
    }
    if (len != length) return (struct outcome){NSS_STATUS_UNAVAIL, EINVAL, NETDB_INTERNAL};

    /* An IPv4 address written as IPv6 (::ffff:a.b.c.d, or the old ::a.b.c.d other than ::1) is
       the IPv4 address, as nss_dns has it; the answer keeps the form asked for, as nss_files says
       ("we always return entries of the requested form"). */
    const unsigned char *query = addr;
    int query_af = af;
    size_t query_length = length;
    if (af == AF_INET6 && (memcmp(query, v4_mapped_prefix, 12) == 0 ||
                           (memcmp(query, v4_compatible_prefix, 12) == 0 && memcmp(query + 12, loopback_suffix, 4) != 0))) {
        query += 12;
        query_af = AF_INET;
        query_length = sizeof(struct in_addr);
    }
    char text[INET6_ADDRSTRLEN];
    if (inet_ntop(query_af, query, text, sizeof text) == NULL) return unavailable(errno);
    char request[REQUEST_CAPACITY];
    size_t request_length = build_request(request, "reverse", "address", text, NULL, "");
    if (request_length == 0) return unavailable(EINVAL);
    struct json_reader result;
    struct arena arena;
    struct outcome outcome = call_daemon(request, request_length, buffer, buflen, &result, &arena);
    if (outcome.status == NSS_STATUS_NOTFOUND) return unknown_address;
    if (!succeeded(outcome)) return outcome;
    struct reverse_answer answer;
    unsigned char echoed[16];
    /* The answer must be about this address and name at least one host. */
    if (read_reverse_answer(&result, &answer) != 0 || parse_address(&answer.address, query_af, echoed) != 0 ||
        memcmp(echoed, query, query_length) != 0)
        return unavailable(EBADMSG);
    if (answer.host_count == 0) return unknown_address;

    char **aliases = arena_take(&arena, answer.host_count * sizeof(char *), alignof(char *));
    char **addresses = arena_take(&arena, 2 * sizeof(char *), alignof(char *));
    char *copy = arena_take(&arena, length, alignof(struct in6_addr));
    if (aliases == NULL || addresses == NULL || copy == NULL) return buffer_too_small;
    struct json_reader hosts = answer.hosts;
    struct json_iterator elements = {0};
    json_array_begin(&hosts);
    /* Most recent first: the first is h_name, the others are aliases. */
    for (size_t i = 0; i < answer.host_count; i++) {
        struct json_span span;
        json_array_next(&hosts, &elements);
        json_read_string(&hosts, &span);
        bool invalid;
        char *name = arena_name(&arena, &span, &invalid);
        if (name == NULL) return invalid ? unavailable(EBADMSG) : buffer_too_small;
        if (i == 0) {
            host->h_name = name;
        } else {
            aliases[i - 1] = name;
        }
    }
    aliases[answer.host_count - 1] = NULL;
    memcpy(copy, addr, length);
    addresses[0] = copy;
    addresses[1] = NULL;
    host->h_aliases = aliases;
    host->h_addrtype = af;
    host->h_length = (int)length;
    host->h_addr_list = addresses;
    if (ttlp != NULL) *ttlp = clamp_ttl(answer.ttl);
    return success;
}

enum nss_status _nss_httpdns_gethostbyaddr2_r(const void *addr, socklen_t len, int af, struct hostent *host,
                                              char *buffer, size_t buflen, int *errnop, int *h_errnop,
                                              int32_t *ttlp) {
    int saved_errno = errno;
    return finish(lookup_address(addr, len, af, host, buffer, buflen, ttlp), saved_errno, errnop, h_errnop);
}

enum nss_status _nss_httpdns_gethostbyaddr_r(const void *addr, socklen_t len, int af, struct hostent *host,
                                             char *buffer, size_t buflen, int *errnop, int *h_errnop) {
    return _nss_httpdns_gethostbyaddr2_r(addr, len, af, host, buffer, buflen, errnop, h_errnop, NULL);
}
