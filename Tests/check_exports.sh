#!/bin/sh
# Checks that the functions the public headers declare extern (httpdns.h; httpdns_curl.h has
# only static inline helpers) and the symbols libhttpdns.so exports are the same set, and that
# it exports nothing else (the static Swift runtime stays private).
# HTTPDNS_LIB: the library (default .build/release/libhttpdns.so).
set -eu
cd "$(dirname "$0")/.."
lib="${HTTPDNS_LIB:-.build/release/libhttpdns.so}"
include=Sources/HTTPDNSClientC/include
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# The compiler lists every prototype of the headers (gcc -aux-info), so the check reads
# declarations as C does, not by pattern.
printf '#include "httpdns.h"\n#include "httpdns_curl.h"\n' > "$work/probe.c"
gcc -std=c11 -fsyntax-only -I "$include" -aux-info "$work/aux" "$work/probe.c"
grep -F "$include/httpdns.h:" "$work/aux" | grep -E ' extern ' | sed -E 's/.* \**(httpdns_[a-z_]+) \(.*/\1/' \
    | sort -u > "$work/declared"
if grep -F "$include/httpdns_curl.h:" "$work/aux" | grep -vE '\*/ static '; then
    echo "check_exports: httpdns_curl.h declares a function that is not static inline (above)" >&2
    failed=1
fi

# Global symbols only (upper-case types; A is the version node).
nm -D --defined-only "$lib" | awk '$2 ~ /^[B-Z]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u > "$work/exported"
if ! diff -u "$work/declared" "$work/exported"; then
    echo "check_exports: declared (-) and exported (+) symbols differ" >&2
    failed=1
fi

if [ "$failed" -eq 0 ]; then
    echo "check_exports: $(wc -l < "$work/declared") functions, 1 passed, 0 failed"
else
    echo "check_exports: 0 passed, 1 failed" >&2
    exit 1
fi
