/*
 * The members of a JSON line's top-level object, found without parsing the whole line: what
 * the load generator and the reference server need (a message's "id", "result", "error") and
 * no more. Strings are skipped whole, so a name inside a string or a nested object never
 * matches. Lines are assumed to be JSON; on anything else the walk just ends early.
 */
#ifndef HTTPDNSD_BENCH_TOPLEVEL_H
#define HTTPDNSD_BENCH_TOPLEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct top_level_walk {
	const char *at, *end;
	int nesting;
};

struct top_level_member {
	const char *name;   /* without the quotes */
	size_t name_len;
	const char *value;  /* the first byte of the member's value */
};

static inline struct top_level_walk top_level_walk(const char *line, const char *end)
{
	return (struct top_level_walk){ .at = line, .end = end, .nesting = 0 };
}

/* The next member of the top-level object; false when there is none left. */
static inline bool next_top_level_member(struct top_level_walk *w, struct top_level_member *member)
{
	const char *p = w->at, *end = w->end;
	while (p < end) {
		char c = *p;
		if (c == '{' || c == '[') {
			w->nesting++;
			p++;
		} else if (c == '}' || c == ']') {
			w->nesting--;
			p++;
		} else if (c == '"') {
			const char *name = ++p;
			while (p < end && *p != '"') p += (*p == '\\') ? 2 : 1;
			if (p >= end) break;
			size_t name_len = (size_t)(p - name);
			p++;
			if (w->nesting != 1) continue;
			const char *q = p;
			while (q < end && (*q == ' ' || *q == '\t')) q++;
			if (q >= end || *q != ':') continue; /* a string value, not a member name */
			q++;
			while (q < end && (*q == ' ' || *q == '\t')) q++;
			w->at = q;
			*member = (struct top_level_member){ .name = name, .name_len = name_len, .value = q };
			return true;
		} else {
			p++;
		}
	}
	w->at = end;
	return false;
}

static inline bool top_level_member_is(const struct top_level_member *member, const char *name)
{
	return member->name_len == strlen(name) && memcmp(member->name, name, member->name_len) == 0;
}

#endif
