/* The JSON of the wire contract, as little of it as the module needs: a strict pull reader for
 * one reply line held in memory, and a writer for the one string a request carries.
 *
 * The reader reads in place and allocates nothing: strings come back as spans of the text, decoded only
 * when copied out. Anything that is not valid JSON is an error, including invalid UTF-8, lone
 * surrogates, raw control characters, leading zeros and trailing commas, so a reply is either read
 * exactly as the daemon meant it or refused. Every function returns -1 on malformed input. */
#ifndef NSS_HTTPDNS_JSON_H
#define NSS_HTTPDNS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_reader {
    const char *cursor;
    const char *end;
};

/* A string's contents between its quotes, escapes not yet decoded. */
struct json_span {
    const char *start;
    size_t length;
    bool escaped;
};

/* Where an object's or array's members are: how many were read so far (for the commas). */
struct json_iterator {
    size_t count;
};

void json_reader_init(struct json_reader *reader, const char *text, size_t length);

/* Consumes '{' or '['. */
int json_object_begin(struct json_reader *reader);
int json_array_begin(struct json_reader *reader);

/* 1: a member follows, its key in *key and the reader at its value; 0: the object ended. */
int json_object_next(struct json_reader *reader, struct json_iterator *iterator, struct json_span *key);

/* 1: an element follows, the reader at it; 0: the array ended. */
int json_array_next(struct json_reader *reader, struct json_iterator *iterator);

int json_read_string(struct json_reader *reader, struct json_span *string);

/* The literal null. */
int json_read_null(struct json_reader *reader);

/* An integer without fraction or exponent that fits in int64_t. */
int json_read_integer(struct json_reader *reader, int64_t *value);

/* Any value, checked as thoroughly as the ones read. */
int json_skip_value(struct json_reader *reader);

/* 0 when nothing but whitespace is left. */
int json_expect_end(struct json_reader *reader);

/* The decoded length of a span read by json_read_string. */
size_t json_span_decoded_length(const struct json_span *string);

/* Writes the decoded bytes (no terminator) to out, which holds json_span_decoded_length bytes. */
void json_span_decode(const struct json_span *string, char *out);

/* Whether the decoded span equals the NUL-terminated literal (an escaped key matches too). */
bool json_span_equals(const struct json_span *string, const char *literal);

/* Writes text[0..length) as a JSON string, quotes included, to out; returns the bytes written, or 0
   when it does not fit in capacity or is no string a host name or address can be: invalid UTF-8
   or a control character. */
size_t json_write_string(const char *text, size_t length, char *out, size_t capacity);

#endif
