#include "json.h"

#include <string.h>

/* Deeper nesting than this is refused: the replies read here are two levels deep, and skipping
   unknown members recurses once per level. */
enum { MAX_DEPTH = 32 };

void json_reader_init(struct json_reader *reader, const char *text, size_t length) {
    reader->cursor = text;
    reader->end = text + length;
}

static void skip_whitespace(struct json_reader *reader) {
    while (reader->cursor < reader->end) {
        char c = *reader->cursor;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        reader->cursor++;
    }
}

static bool at(struct json_reader *reader, char c) {
    skip_whitespace(reader);
    return reader->cursor < reader->end && *reader->cursor == c;
}

static int consume(struct json_reader *reader, char c) {
    if (!at(reader, c)) return -1;
    reader->cursor++;
    return 0;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The four hex digits at p, or -1. */
static int32_t hex4(const char *p) {
    int32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p[i]);
        if (digit < 0) return -1;
        value = value << 4 | digit;
    }
    return value;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates,
   nothing above U+10FFFF), or 0. */
static size_t utf8_sequence_length(const unsigned char *p, const unsigned char *end) {
    size_t length;
    uint32_t code_point;
    uint32_t minimum;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        length = 2;
        code_point = p[0] & 0x1F;
        minimum = 0x80;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        length = 3;
        code_point = p[0] & 0x0F;
        minimum = 0x800;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        length = 4;
        code_point = p[0] & 0x07;
        minimum = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < length) return 0;
    for (size_t i = 1; i < length; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        code_point = code_point << 6 | (p[i] & 0x3F);
    }
    if (code_point < minimum || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
    return length;
}

int json_read_string(struct json_reader *reader, struct json_span *string) {
    if (consume(reader, '"') != 0) return -1;
    const char *start = reader->cursor;
    bool escaped = false;
    while (reader->cursor < reader->end) {
        unsigned char c = (unsigned char)*reader->cursor;
        if (c == '"') {
            string->start = start;
            string->length = (size_t)(reader->cursor - start);
            string->escaped = escaped;
            reader->cursor++;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c >= 0x80) {
            size_t length =
                utf8_sequence_length((const unsigned char *)reader->cursor, (const unsigned char *)reader->end);
            if (length == 0) return -1;
            reader->cursor += length;
            continue;
        }
        if (c != '\\') {
            reader->cursor++;
            continue;
        }
        escaped = true;
        if (reader->end - reader->cursor < 2) return -1;
        switch (reader->cursor[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            reader->cursor += 2;
            continue;
        case 'u':
            break;
        default:
            return -1;
        }
        if (reader->end - reader->cursor < 6) return -1;
        int32_t unit = hex4(reader->cursor + 2);
        if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return -1;
        reader->cursor += 6;
        if (unit >= 0xD800 && unit <= 0xDBFF) {
            /* A high surrogate is only valid as the first half of a pair. */
            if (reader->end - reader->cursor < 6 || reader->cursor[0] != '\\' || reader->cursor[1] != 'u') return -1;
            int32_t low = hex4(reader->cursor + 2);
            if (low < 0xDC00 || low > 0xDFFF) return -1;
            reader->cursor += 6;
        }
    }
    return -1;
}

/* Decodes the next character of a validated span at *p into out (1 to 4 bytes); returns its length. */
static size_t decode_next(const char **p, unsigned char out[4]) {
    const char *s = *p;
    if (s[0] != '\\') {
        out[0] = (unsigned char)s[0];
        *p = s + 1;
        return 1;
    }
    char simple = 0;
    switch (s[1]) {
    case 'b': simple = '\b'; break;
    case 'f': simple = '\f'; break;
    case 'n': simple = '\n'; break;
    case 'r': simple = '\r'; break;
    case 't': simple = '\t'; break;
    case 'u': break;
    default: simple = s[1]; break;
    }
    if (simple != 0) {
        out[0] = (unsigned char)simple;
        *p = s + 2;
        return 1;
    }
    uint32_t code_point = (uint32_t)hex4(s + 2);
    *p = s + 6;
    if (code_point >= 0xD800 && code_point <= 0xDBFF) {
        code_point = 0x10000 + ((code_point - 0xD800) << 10) + ((uint32_t)hex4(s + 8) - 0xDC00);
        *p = s + 12;
    }
    if (code_point < 0x80) {
        out[0] = (unsigned char)code_point;
        return 1;
    }
    if (code_point < 0x800) {
        out[0] = (unsigned char)(0xC0 | code_point >> 6);
        out[1] = (unsigned char)(0x80 | (code_point & 0x3F));
        return 2;
    }
    if (code_point < 0x10000) {
        out[0] = (unsigned char)(0xE0 | code_point >> 12);
        out[1] = (unsigned char)(0x80 | (code_point >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (code_point & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | code_point >> 18);
    out[1] = (unsigned char)(0x80 | (code_point >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (code_point >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (code_point & 0x3F));
    return 4;
}

size_t json_span_decoded_length(const struct json_span *string) {
    if (!string->escaped) return string->length;
    size_t length = 0;
    unsigned char scratch[4];
    const char *p = string->start;
    const char *end = string->start + string->length;
    while (p < end) length += decode_next(&p, scratch);
    return length;
}

void json_span_decode(const struct json_span *string, char *out) {
    if (!string->escaped) {
        memcpy(out, string->start, string->length);
        return;
    }
    const char *p = string->start;
    const char *end = string->start + string->length;
    while (p < end) {
        unsigned char bytes[4];
        size_t n = decode_next(&p, bytes);
        memcpy(out, bytes, n);
        out += n;
    }
}

bool json_span_equals(const struct json_span *string, const char *literal) {
    size_t literal_length = strlen(literal);
    if (!string->escaped) return string->length == literal_length && memcmp(string->start, literal, literal_length) == 0;
    const char *p = string->start;
    const char *end = string->start + string->length;
    size_t matched = 0;
    while (p < end) {
        unsigned char bytes[4];
        size_t n = decode_next(&p, bytes);
        if (n > literal_length - matched || memcmp(bytes, literal + matched, n) != 0) return false;
        matched += n;
    }
    return matched == literal_length;
}

int json_read_integer(struct json_reader *reader, int64_t *value) {
    skip_whitespace(reader);
    const char *p = reader->cursor;
    bool negative = p < reader->end && *p == '-';
    if (negative) p++;
    if (p >= reader->end || !is_digit(*p)) return -1;
    if (*p == '0' && p + 1 < reader->end && is_digit(p[1])) return -1;
    uint64_t magnitude = 0;
    while (p < reader->end && is_digit(*p)) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (magnitude > ((uint64_t)INT64_MAX - digit) / 10) return -1;
        magnitude = magnitude * 10 + digit;
        p++;
    }
    if (p < reader->end && (*p == '.' || *p == 'e' || *p == 'E')) return -1;
    *value = negative ? -(int64_t)magnitude : (int64_t)magnitude;
    reader->cursor = p;
    return 0;
}

static int skip_number(struct json_reader *reader) {
    const char *p = reader->cursor;
    const char *end = reader->end;
    if (p < end && *p == '-') p++;
    if (p >= end || !is_digit(*p)) return -1;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) return -1;
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) return -1;
        while (p < end && is_digit(*p)) p++;
    }
    /* A number ends at a delimiter: "0x1" or "1true" is no number. */
    if (p < end && !(*p == ',' || *p == '}' || *p == ']' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        return -1;
    reader->cursor = p;
    return 0;
}

static int skip_literal(struct json_reader *reader, const char *literal) {
    size_t length = strlen(literal);
    if ((size_t)(reader->end - reader->cursor) < length || memcmp(reader->cursor, literal, length) != 0) return -1;
    reader->cursor += length;
    return 0;
}

int json_read_null(struct json_reader *reader) {
    skip_whitespace(reader);
    return skip_literal(reader, "null");
}

int json_object_begin(struct json_reader *reader) { return consume(reader, '{'); }

int json_array_begin(struct json_reader *reader) { return consume(reader, '['); }

int json_object_next(struct json_reader *reader, struct json_iterator *iterator, struct json_span *key) {
    if (at(reader, '}')) {
        reader->cursor++;
        return 0;
    }
    if (iterator->count > 0 && consume(reader, ',') != 0) return -1;
    if (json_read_string(reader, key) != 0 || consume(reader, ':') != 0) return -1;
    iterator->count++;
    return 1;
}

int json_array_next(struct json_reader *reader, struct json_iterator *iterator) {
    if (at(reader, ']')) {
        reader->cursor++;
        return 0;
    }
    if (iterator->count > 0 && consume(reader, ',') != 0) return -1;
    iterator->count++;
    skip_whitespace(reader);
    return 1;
}

static int skip_value(struct json_reader *reader, int depth) {
    skip_whitespace(reader);
    if (reader->cursor >= reader->end) return -1;
    switch (*reader->cursor) {
    case '"': {
        struct json_span ignored;
        return json_read_string(reader, &ignored);
    }
    case '{': {
        if (depth >= MAX_DEPTH) return -1;
        reader->cursor++;
        struct json_iterator members = {0};
        struct json_span key;
        int more;
        while ((more = json_object_next(reader, &members, &key)) == 1) {
            if (skip_value(reader, depth + 1) != 0) return -1;
        }
        return more;
    }
    case '[': {
        if (depth >= MAX_DEPTH) return -1;
        reader->cursor++;
        struct json_iterator elements = {0};
        int more;
        while ((more = json_array_next(reader, &elements)) == 1) {
            if (skip_value(reader, depth + 1) != 0) return -1;
        }
        return more;
    }
    case 't': return skip_literal(reader, "true");
    case 'f': return skip_literal(reader, "false");
    case 'n': return skip_literal(reader, "null");
    default: return skip_number(reader);
    }
}

int json_skip_value(struct json_reader *reader) { return skip_value(reader, 0); }

int json_expect_end(struct json_reader *reader) {
    skip_whitespace(reader);
    return reader->cursor == reader->end ? 0 : -1;
}

size_t json_write_string(const char *text, size_t length, char *out, size_t capacity) {
    size_t written = 0;
    if (capacity < 2) return 0;
    out[written++] = '"';
    for (size_t i = 0; i < length;) {
        unsigned char c = (unsigned char)text[i];
        size_t run = 1;
        if (c < 0x20 || c == 0x7F) return 0;
        if (c >= 0x80) {
            run = utf8_sequence_length((const unsigned char *)text + i, (const unsigned char *)text + length);
            if (run == 0) return 0;
        }
        bool escape = c == '"' || c == '\\';
        /* Room for this character, its escape and the closing quote. */
        if (capacity - written < run + (escape ? 1 : 0) + 1) return 0;
        if (escape) out[written++] = '\\';
        memcpy(out + written, text + i, run);
        written += run;
        i += run;
    }
    out[written++] = '"';
    return written;
}
